// Package talosclab is the talosc-lab command: it starts the lab (simulated
// clouds, Image Factory, Talos nodes, Kubernetes API) on loopback, writes a
// ready cluster directory, and reports what the lab has seen.
package talosclab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/follow"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/version"
)

// StateFile is written into the cluster directory while a lab runs: where
// its control API is.
const StateFile = ".talosc-lab.json"

// runState is the content of StateFile.
type runState struct {
	Control  string         `json:"control"`
	PID      int            `json:"pid"`
	Services []lab.Endpoint `json:"services"`
}

// NewCommand returns the talosc-lab root command.
func NewCommand(s cli.Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "talosc-lab",
		Short: "Run a whole cloud for talosc on loopback: OpenStack or Proxmox, Image Factory, Talos nodes, Kubernetes",
		Long: `talosc-lab simulates everything talosc talks to, bound only to 127.0.0.0/8, so
talosc can be tried and tested without a cloud. "talosc-lab up" starts it and
writes a cluster directory pointing at it; "talosc-lab status" shows what it
has seen.

` + cli.ExitCodesHelp,
		Version:       version.Version(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.AddCommand(newUpCommand(s), newStatusCommand(s))
	return root
}

// UpOptions configures "talosc-lab up".
type UpOptions struct {
	Dir       string
	Provider  string
	NodesBoot time.Duration
	Seed      uint64
	Latency   time.Duration
	ErrorRate float64
	// LostRate, LateRate, LateBy, SlowRate and Slow: see labnet.Knobs.
	LostRate float64
	LateRate float64
	LateBy   time.Duration
	SlowRate float64
	Slow     time.Duration
	// ArgoCD also runs the argocd plugin's management cluster.
	ArgoCD bool
	// Rancher writes the lab Rancher's credentials into secrets.yaml;
	// RancherAuth is the auth provider its principals search answers as.
	Rancher     bool
	RancherAuth string
	// FollowCloud, when set, names the ADMIN cloud of a clouds.yaml
	// (CloudsYAML, "" for the standard locations) whose real OpenStack the
	// lab follows instead of simulating one.
	FollowCloud string
	CloudsYAML  string
}

func newUpCommand(s cli.Streams) *cobra.Command {
	o := &UpOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab and serve until interrupted",
		Long: `Start the lab and serve until interrupted. Its control API (the "control"
address in ` + StateFile + `) takes:

  GET /status                  what "talosc-lab status" shows
  GET /calls                   every call the lab answered
  PUT /knobs                   API faults of every service (latency, errorRate, hangRate,
                               lostRate, lateRate, lateBy, slowRate, slow, seed,
                               scripted faults)
  GET /nodes                   every Talos node, by address
  PUT /nodes/ADDRESS/knobs     one node's scripted faults, replacing its knobs:
                               {"neverBoots": true}, {"resetFails": "MESSAGE"},
                               {"neverLeavesEtcd": true}, {"etcdNeverStarts": true},
                               {"rebootDown": "30s"} (a Go duration); 404 without a
                               node there, unless ?pending=true keeps them for the
                               next node to boot at ADDRESS`,
		Example: `  # Start a lab OpenStack and a cluster directory for it in ./lab
  talosc-lab up --provider openstack -C lab

  # Make the node that boots next at 127.16.0.12 never boot
  curl -X PUT -d '{"neverBoots": true}' "$(jq -r .control lab/` + StateFile + `)/nodes/127.16.0.12/knobs?pending=true"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Provider != "openstack" && o.Provider != "proxmox" {
				return cli.Usagef("--provider %q: choose openstack or proxmox", o.Provider)
			}
			if err := lab.ValidateKnobs(o.knobs()); err != nil {
				return cli.Usagef("fault flags (--error-rate, --lost-rate, --late-rate, --late-by, --slow-rate, --slow): %v", err)
			}
			return o.Run(cmd.Context(), s)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Dir, "dir", "C", "lab", "write the cluster directory to `DIR`")
	f.StringVar(&o.Provider, "provider", "openstack", "the cloud to simulate: openstack or proxmox")
	f.DurationVar(&o.NodesBoot, "nodes-boot", 2*time.Second, "how long a simulated node takes to boot")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the random faults (replay a run with the same seed)")
	f.DurationVar(&o.Latency, "latency", 0, "latency added to every request")
	f.Float64Var(&o.ErrorRate, "error-rate", 0, "probability (0..1) that a request fails with 503")
	f.Float64Var(&o.LostRate, "lost-rate", 0, "probability (0..1) that a mutating request is applied and its answer then lost (502, 504, a reset connection or a hang)")
	f.Float64Var(&o.LateRate, "late-rate", 0, "probability (0..1) that a mutating request's answer is lost (504, or a hang until the client's deadline) and the request applied --late-by after that, as a busy real API does")
	f.DurationVar(&o.LateBy, "late-by", labnet.DefaultLateBy, "how long after the client's answer ended a late request is applied")
	f.Float64Var(&o.SlowRate, "slow-rate", 0, "probability (0..1) that an answer comes --slow late")
	f.DurationVar(&o.Slow, "slow", 0, "how late a slow answer comes (set it just under the client's timeout)")
	f.BoolVar(&o.Rancher, "rancher", false, "write the lab Rancher's url, token and CA into the cluster directory's secrets.yaml (add a rancher section with admins and users to cluster.yaml)")
	f.StringVar(&o.RancherAuth, "rancher-auth", "local", "the auth provider the lab Rancher's principals search answers as: local, openldap or shibboleth")
	f.BoolVar(&o.ArgoCD, "argocd", false, "also run the argocd plugin's management cluster (a second kube-apiserver with the ArgoCD CRDs)")
	f.StringVar(&o.FollowCloud, "follow-openstack", "", "follow the real OpenStack of the admin `CLOUD` of clouds.yaml (e.g. oslab) instead of simulating one")
	f.StringVar(&o.CloudsYAML, "clouds-yaml", "", "the clouds.yaml for --follow-openstack (default: the standard locations)")
	return cmd
}

// knobs are the fault knobs the flags set.
func (o *UpOptions) knobs() labnet.Knobs {
	return labnet.Knobs{
		Seed: o.Seed, Latency: o.Latency, ErrorRate: o.ErrorRate, LostRate: o.LostRate,
		LateRate: o.LateRate, LateBy: o.LateBy, SlowRate: o.SlowRate, Slow: o.Slow,
	}
}

// Run starts the lab, writes the state file, and serves until ctx ends.
func (o *UpOptions) Run(ctx context.Context, s cli.Streams) error {
	start := time.Now()
	var followed *follow.Options
	if o.FollowCloud != "" {
		var err error
		if followed, err = follow.FromClouds(o.CloudsYAML, o.FollowCloud); err != nil {
			return err
		}
	}
	l, err := lab.Start(ctx, lab.Options{
		Follow:      followed,
		Provider:    o.Provider,
		NodesBoot:   o.NodesBoot,
		ArgoCD:      o.ArgoCD,
		RancherAuth: o.RancherAuth,
		Knobs:       o.knobs(),
		Logf:        func(format string, args ...any) { fmt.Fprintf(s.ErrOut, "talosc-lab: "+format+"\n", args...) },
	})
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	var files []string
	if followed == nil {
		files, err = l.WriteClusterDir(o.Dir, "lab")
		if err == nil && o.Rancher {
			var more []string
			more, err = l.WriteRancherCredentials(o.Dir)
			files = append(files, more...)
		}
	} else { // the followed cloud's own clouds.yaml and credentials apply
		err = os.MkdirAll(o.Dir, 0o755)
	}
	if err != nil {
		return err
	}
	ln, err := labnet.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	control := &http.Server{Handler: l.ControlHandler(), ReadHeaderTimeout: labnet.ReadHeaderTimeout}
	go func() { _ = control.Serve(ln) }()
	defer func() { _ = control.Close() }()
	st := runState{Control: "http://" + ln.Addr().String(), PID: os.Getpid(), Services: l.Services()}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	statePath := filepath.Join(o.Dir, StateFile)
	if err := os.WriteFile(statePath, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", statePath, err)
	}
	defer func() { _ = os.Remove(statePath) }()
	for _, e := range l.Services() {
		fmt.Fprintf(s.ErrOut, "%-14s %s\n", e.Name, e.URL)
	}
	fmt.Fprintf(s.ErrOut, "%-14s %s\n", "control", st.Control)
	fmt.Fprintf(s.ErrOut, "cluster dir    %s (%s)\n", o.Dir, strings.Join(files, ", "))
	if followed != nil { // the followed cloud's cluster.yaml is the user's: name the lab's factory there
		fmt.Fprintf(s.ErrOut, "in cluster.yaml talos.image_factory: {url: %s, allow_http: true}\n", l.Factory.URL)
		fmt.Fprintf(s.ErrOut, "               kubernetes.kubelet_repository: {url: %s, allow_http: true}\n", l.Factory.KubeletRepositoryURL())
	}
	fmt.Fprintf(s.ErrOut, "use it with    kubectl talosc converge -C %s\n", o.Dir)
	fmt.Fprintf(s.ErrOut, "talosc-lab: ready in %s (provider %s, cluster directory %s); Ctrl-C stops it\n", time.Since(start).Round(time.Millisecond), o.Provider, o.Dir)
	<-ctx.Done()
	fmt.Fprintln(s.ErrOut, "talosc-lab: stopping")
	return nil
}

func newStatusCommand(s cli.Streams) *cobra.Command {
	var dir, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what the running lab serves and the calls it has answered",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return cli.Usagef("--output %q: choose text or json", output)
			}
			return runStatus(cmd.Context(), s, dir, output)
		},
	}
	cmd.Flags().StringVarP(&dir, "dir", "C", "lab", "the lab's cluster `DIR`ectory")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func runStatus(ctx context.Context, s cli.Streams, dir, output string) error {
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("no lab runs for %s (start one with \"talosc-lab up -C %s\")", dir, dir)}
	}
	if err != nil {
		return err
	}
	var st runState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s: %w", StateFile, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.Control+"/status", nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{DialContext: labnet.Dialer().DialContext}}
	resp, err := client.Do(req)
	if err != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("the lab of %s does not answer (stale %s?): %w", dir, StateFile, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	var status lab.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		return fmt.Errorf("lab status: %w", err)
	}
	if output == "json" {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	fmt.Fprintf(s.Out, "provider: %s\nuptime: %s\ncalls: %d (%d mutating), lab busy %s\n", status.Provider, status.Uptime, status.Calls, status.Mutations, status.BusyDuration)
	if status.Lost+status.Late > 0 {
		fmt.Fprintf(s.Out, "answers lost: %d after applying, %d before (late: %d still to apply)\n", status.Lost, status.Late, status.LatePending)
	}
	for _, e := range status.Services {
		fmt.Fprintf(s.Out, "  %-22s %s\n", e.Name, e.URL)
	}
	for _, svc := range slices.Sorted(maps.Keys(status.CallsBy)) {
		fmt.Fprintf(s.Out, "  calls to %-13s %d\n", svc, status.CallsBy[svc])
	}
	for _, v := range status.VIPs {
		owner := "nobody (the API refuses connections)"
		if v.Owner.IsValid() {
			owner = v.Owner.String()
		}
		fmt.Fprintf(s.Out, "  vip %s of %s owned by %s\n", v.Address, v.Cluster, owner)
	}
	return nil
}
