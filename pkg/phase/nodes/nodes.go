// Package nodes is the nodes phase: the cluster identity, the machines and
// their Talos configurations, bootstrap, the kubeconfig and talosconfig, and
// the health of the whole cluster. This build creates clusters and grows
// them; removing machines, rollouts and upgrades are refused with a clear
// message rather than done unsafely.
package nodes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// The reference's budgets (§3.2 I-X2), scaled by TALOSC_TIME_SCALE.
const (
	reachableBudget = 900 * time.Second
	reachablePoll   = 15 * time.Second
	bootstrapBudget = 5 * time.Minute
	readyBudget     = 900 * time.Second
	readyPoll       = 15 * time.Second
	probeAttempts   = 3
	probeInterval   = 10 * time.Second
	healthBudget    = 10 * time.Minute
	addressBudget   = 600 * time.Second
	addressPoll     = 15 * time.Second
)

// Outputs is the nodes section's outputs.
type Outputs struct {
	Provider string `json:"provider"`
	// Machines are the owned machines after the run.
	Machines []provider.Machine `json:"machines"`
	// Up reports that the Kubernetes API answered.
	Up bool `json:"up"`
	// Bootstrapped reports that the cluster has a kubeconfig (it was
	// bootstrapped by this run or an earlier one).
	Bootstrapped bool `json:"bootstrapped"`
	// TalosEndpoint is talosconfig's endpoint (a real control plane).
	TalosEndpoint string `json:"talosEndpoint,omitempty"`
	// KubernetesEndpoint is the API URL clients use.
	KubernetesEndpoint string `json:"kubernetesEndpoint,omitempty"`
	// Nodes are the Kubernetes nodes, when the API answered.
	Nodes []kube.Node `json:"nodes,omitempty"`
}

// Phase is the nodes phase.
type Phase struct{}

var _ phase.Phase = Phase{}

// Name is the section the phase owns.
func (Phase) Name() string { return phase.Nodes }

// run is one converge of the nodes phase.
type run struct {
	in      *phase.Input
	cfg     *config.Cluster
	cloud   provider.Cloud
	plan    *provider.Plan
	sec     *state.Section
	out     Outputs
	desired []config.Machine
	inv     *provider.Inventory
	net     *provider.NetworkResult
	image   provider.Image
	id      *identity.Identity
}

// Converge builds or grows the cluster.
func (Phase) Converge(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	r := &run{in: in, cfg: in.Config, cloud: cloud, plan: in.NewPlan(), sec: sec, desired: in.Config.Hostnames()}
	r.out.Provider = in.Config.Provider()
	err = r.converge(ctx)
	sec.Plan = append(sec.Plan, r.plan.Changes()...)
	return errors.Join(err, sec.SetOutputs(r.out))
}

func (r *run) converge(ctx context.Context) error {
	if err := r.validate(ctx); err != nil {
		return err
	}
	if err := r.ensureIdentity(ctx); err != nil {
		return err
	}
	up, err := r.discover(ctx)
	if err != nil {
		return err
	}
	r.out.Up = up
	if up {
		if err := r.checkVersions(ctx); err != nil {
			return err
		}
		// A converge whose first phase ran Validate has compared every
		// node's configuration already; reading them again would only
		// double the Talos calls. A plan, or this phase run alone, compares.
		if r.in.DryRun || !validatedUpstream(r.in.State) {
			if err := r.checkConfigs(ctx); err != nil {
				return err
			}
		}
	}
	if err := r.cloud.ReconcileMachines(ctx, r.cfg, r.inv, r.plan); err != nil {
		return err
	}
	if err := r.createMachines(ctx); err != nil {
		return err
	}
	if err := r.resolveAddresses(ctx); err != nil {
		return err
	}
	if err := r.writeTalosconfig(); err != nil {
		return err
	}
	if r.in.DryRun {
		if up {
			return r.restartPending(ctx, r.inv) // plans the restarts with --reboot
		}
		r.plan.Record(state.Change{Action: state.ActionCreate, Kind: "talos:bootstrap", Name: r.desired[0].Hostname, Detail: "etcd on the first control plane"})
		r.plan.Record(state.Change{Action: state.ActionCreate, Kind: "file", Name: config.KubeconfigFile, Detail: "from the first control plane"})
		return nil
	}
	if !up {
		if err := r.bootstrap(ctx); err != nil {
			return err
		}
	}
	if err := r.health(ctx); err != nil {
		return err
	}
	inv, err := r.cloud.Inventory(ctx, r.cfg) // with the machines made by this run
	if err != nil {
		return err
	}
	if err := r.restartPending(ctx, inv); err != nil {
		return err
	}
	return r.cloud.FinalizeMachines(ctx, r.cfg, inv, r.plan)
}

// resolveAddresses waits until every desired machine has a real address:
// the network phase's (OpenStack ports, static SDN addresses) or, for
// DHCP networks, what the provider reports once the machine runs (the
// Proxmox guest agent), polling the inventory (reference §3.1 step 12:
// 600 s, 15 s apart). A dry run does not wait.
func (r *run) resolveAddresses(ctx context.Context) error {
	if r.in.DryRun {
		return nil
	}
	deadline := time.Now().Add(r.in.Env.Scale(addressBudget))
	for {
		var missing []string
		for _, m := range r.desired {
			if _, ok := r.address(m.Hostname); !ok {
				missing = append(missing, m.Hostname)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no address reported for %s after %s: check that the machines run and their guest agent answers", strings.Join(missing, ", "), r.in.Env.Scale(addressBudget))
		}
		if err := ctxwait.Sleep(ctx, r.in.Env.Scale(addressPoll)); err != nil {
			return err
		}
		inv, err := r.cloud.Inventory(ctx, r.cfg)
		if err != nil {
			return err
		}
		r.inv = inv
	}
}

// validate runs the preflight (refusing what this build cannot do safely,
// before any mutation) and keeps its inventory.
func (r *run) validate(ctx context.Context) error {
	inv, err := preflight.Run(ctx, r.in, r.cloud)
	if inv != nil {
		r.inv = inv
		r.out.Machines = inv.Machines
	}
	if err != nil {
		return err
	}
	return r.endpoints(ctx)
}

// endpoints takes the network and image from the earlier phases' sections,
// or reads them from the provider when this phase runs alone.
func (r *run) endpoints(ctx context.Context) error {
	net, ok, err := sections.ReadNetwork(r.in.State)
	switch {
	case err != nil:
		return err
	case ok:
		r.net = &net.NetworkResult
	default:
		if r.net, err = r.cloud.CurrentNetwork(ctx, sections.NetworkSpec(r.cfg)); err != nil {
			return err
		}
	}
	img, ok, err := sections.ReadImage(r.in.State)
	switch {
	case err != nil:
		return err
	case ok:
		r.image = img.Image
	}
	return nil
}

// ensureIdentity loads talossecrets.yaml or, for a brand-new cluster,
// generates it (a dry run keeps it in memory).
func (r *run) ensureIdentity(ctx context.Context) error {
	id, created, err := identity.Ensure(ctx, r.cfg.Dir, r.cfg.Talos.Version, r.inv.Hostnames(), r.in.DryRun)
	if err != nil {
		return err
	}
	r.id = id
	if created {
		r.plan.Record(state.Change{Action: state.ActionCreate, Kind: "talos:identity", Name: identity.FileName, Detail: "the cluster's CA and tokens (back it up)"})
	}
	for _, n := range id.Notes() {
		r.in.Out.Info("machine secrets: %s", n)
	}
	return nil
}

// discover decides whether the cluster is up (I-3..I-6): a kubeconfig
// whose API answers within three probes. With machines but no kubeconfig,
// the kubeconfig is recovered from the first control plane first. A
// kubeconfig whose API never answers, with machines, is an existing but
// unreachable cluster: nothing of the nodes is touched and the run fails.
func (r *run) discover(ctx context.Context) (bool, error) {
	path, has := phase.ClientFile(r.cfg, config.KubeconfigFile)
	if !has && len(r.inv.Machines) > 0 {
		if r.in.DryRun {
			r.in.Out.Info("would recover the kubeconfig from %s", r.desired[0].Hostname)
			return false, nil
		}
		recovered, err := r.recoverKubeconfig(ctx, path)
		if err != nil || !recovered {
			return false, err
		}
		has = true
	}
	if !has {
		return false, nil
	}
	kc, err := r.kube(path)
	if err != nil {
		return false, err
	}
	up, probeErr := kc.Probe(ctx, probeAttempts, r.in.Env.Scale(probeInterval))
	if up {
		r.out.Bootstrapped = true
		return true, nil
	}
	if len(r.inv.Machines) == 0 {
		return false, nil // a stale kubeconfig of a destroyed cluster
	}
	r.out.Bootstrapped = true
	r.in.Out.Warn("%d machine(s) already exist and %s exists, but the Kubernetes API never answered: this is NOT a fresh cluster", len(r.inv.Machines), path)
	r.in.Out.Warn("refusing to recreate nodes or bootstrap an existing but unreachable cluster; deferring plugin converge hooks")
	return false, fmt.Errorf("cluster not up: existing but unreachable -- not bootstrapping (last probe: %w); check the network path to the API and re-run", probeErr)
}

// recoverKubeconfig fetches the kubeconfig from the first control plane
// (I-4). An unreachable node or an API that does not answer with it means
// an interrupted first run (I-5): the file is removed and the cluster is
// treated as fresh.
func (r *run) recoverKubeconfig(ctx context.Context, path string) (bool, error) {
	cp1, ok := r.address(r.desired[0].Hostname)
	if !ok {
		return false, nil
	}
	c, err := r.talos(ctx, cp1)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := c.WaitReachable(ctx, cp1, r.in.Env.Scale(reachableBudget), r.in.Env.Scale(reachablePoll), nil); err != nil {
		r.in.Out.Warn("kubeconfig recovery: %v", err)
		return false, nil
	}
	data, err := c.Kubeconfig(ctx, cp1)
	if err != nil {
		r.in.Out.Warn("kubeconfig recovery: %v", err)
		return false, nil
	}
	if err := identity.WriteKubeconfig(path, data); err != nil {
		return false, err
	}
	kc, err := r.kube(path)
	if err == nil {
		if up, _ := kc.Probe(ctx, probeAttempts, r.in.Env.Scale(probeInterval)); up {
			r.in.Out.Info("recovered %s from %s", path, r.desired[0].Hostname)
			return true, nil
		}
	}
	r.in.Out.Info("%s answers but its Kubernetes API does not: an interrupted first run, bootstrapping", r.desired[0].Hostname)
	return false, os.Remove(path)
}

// checkVersions reads the running Kubernetes version of an up cluster:
// configs are never generated against an unknown one (I-13), nor against
// another than the pin.
func (r *run) checkVersions(ctx context.Context) error {
	path, _ := phase.ClientFile(r.cfg, config.KubeconfigFile)
	kc, err := r.kube(path)
	if err != nil {
		return err
	}
	running, err := kc.ServerVersion(ctx)
	if err != nil {
		return fmt.Errorf("could not determine the running cluster's kubernetes version while the kube-api is up; refusing to generate machine configs against an unknown version: %w", err)
	}
	return preflight.CompareVersion("kubernetes", r.cfg.Kubernetes.Version, running)
}

// createMachines generates the configurations of missing machines and
// creates them concurrently.
func (r *run) createMachines(ctx context.Context) error {
	var missing []config.Machine
	for _, m := range r.desired {
		if _, ok := r.inv.Find(m.Hostname); !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !r.hasEndpoint() {
		if r.in.DryRun {
			for _, m := range missing {
				r.plan.Record(state.Change{Action: state.ActionCreate, Kind: r.cfg.Provider() + ":server", Name: m.Hostname, Detail: "after the network phase allocates the API endpoint"})
			}
			return nil
		}
		return errors.New("the network phase reported no Kubernetes API endpoint (VIP and advertised address); run tc-net converge first")
	}
	input, installers, err := r.configInput()
	if err != nil {
		return err
	}
	fc, err := r.in.Env.Factory(nil)
	if err != nil {
		return err
	}
	if err := registerInstallers(ctx, fc, installers); err != nil {
		return err
	}
	specs := make([]provider.MachineSpec, 0, len(missing))
	for _, m := range missing {
		mc, err := r.generate(input, m)
		if err != nil {
			return err
		}
		att, _ := r.attachment(m.Hostname)
		specs = append(specs, provider.MachineSpec{Machine: m, Config: mc.Bytes(), Image: r.image, Attachment: att})
	}
	if r.image.ID == "" && !r.in.DryRun {
		return errors.New("the image phase reported no boot image; run tc-image converge first")
	}
	created, err := r.cloud.CreateMachines(ctx, r.cfg, specs, r.plan)
	r.out.Machines = append(r.out.Machines, created...)
	slices.SortFunc(r.out.Machines, func(a, b provider.Machine) int { return cmp.Compare(a.Hostname, b.Hostname) })
	return err
}

// attachment returns the network phase's attachment of hostname.
func (r *run) attachment(hostname string) (provider.MachineAddress, bool) {
	if r.net == nil {
		return provider.MachineAddress{}, false
	}
	for _, a := range r.net.Machines {
		if a.Hostname == hostname {
			return a, true
		}
	}
	return provider.MachineAddress{}, false
}

// address is a machine's real cluster address: the network phase's, else
// the inventory's.
func (r *run) address(hostname string) (string, bool) {
	if a, ok := r.attachment(hostname); ok && a.Address.IsValid() {
		return a.Address.String(), true
	}
	if m, ok := r.inv.Find(hostname); ok && m.Address.IsValid() {
		return m.Address.String(), true
	}
	return "", false
}

// writeTalosconfig (re)writes talosconfig for the first control plane's
// real address (never the VIP, I-A1).
func (r *run) writeTalosconfig() error {
	cp1, _ := r.address(r.desired[0].Hostname)
	var forbidden []string
	if r.net != nil {
		forbidden = []string{vipString(r.net.Kubernetes.VIP), r.net.Kubernetes.Advertised}
	}
	ep, err := identity.TalosEndpoint(identity.EndpointInput{
		Hostname:        r.desired[0].Hostname,
		Address:         cp1,
		TailscaleActive: r.cfg.Tailscale.Active(),
		Forbidden:       forbidden,
	})
	if err != nil {
		if r.in.DryRun {
			r.plan.Record(state.Change{Action: state.ActionCreate, Kind: "file", Name: config.TalosconfigFile, Detail: "endpoint: the first control plane, once its address is allocated"})
			return nil
		}
		return err
	}
	r.out.TalosEndpoint = ep
	path, exists := phase.ClientFile(r.cfg, config.TalosconfigFile)
	action := state.ActionCreate
	if exists {
		if recorded, ok, _ := identity.ReadTalosconfigEndpoint(path); ok && recorded == ep {
			return nil
		}
		action = state.ActionUpdate
	}
	return r.plan.Do(context.Background(), state.Change{Action: action, Kind: "file", Name: config.TalosconfigFile, Detail: "endpoint " + ep},
		func(context.Context) error { return identity.WriteTalosconfig(path, r.id, r.cfg.Name, ep) })
}

func vipString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// talos dials the Talos API of endpoint with the cluster identity.
func (r *run) talos(ctx context.Context, endpoint string) (*talosapi.Client, error) {
	return talosapi.Dial(ctx, r.id, r.cfg.Name, endpoint, talosapi.Options{
		RetryInterval:     r.in.Env.Scale(talosapi.DefaultRetryInterval),
		MaxReconnectDelay: r.in.Env.Scale(talosapi.DefaultMaxReconnectDelay),
	})
}

// minKubeTimeout is the least a Kubernetes request is given, however
// small TALOSC_TIME_SCALE is.
const minKubeTimeout = 2 * time.Second

// kube opens the kubeconfig at path with the run's scaled request timeout
// and retry interval (a probe of an API that never answers takes three
// timeouts).
func (r *run) kube(path string) (*kube.Client, error) {
	return kube.Load(path, kube.Options{
		Timeout:       max(r.in.Env.Scale(kube.DefaultTimeout), minKubeTimeout),
		RetryInterval: r.in.Env.Scale(kube.DefaultRetryInterval),
	})
}

// bootstrap bootstraps etcd on the first control plane and fetches the
// kubeconfig from it (never from the VIP).
func (r *run) bootstrap(ctx context.Context) error {
	cp1Name := r.desired[0].Hostname
	cp1, ok := r.address(cp1Name)
	if !ok {
		return fmt.Errorf("no address known for %s: the network phase reported none", cp1Name)
	}
	c, err := r.talos(ctx, cp1)
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	r.in.Out.Info("waiting for the Talos API of %s (%s)", cp1Name, cp1)
	if err := c.WaitReachable(ctx, cp1, r.in.Env.Scale(reachableBudget), r.in.Env.Scale(reachablePoll), throttle(func(elapsed time.Duration) {
		r.in.Out.Info("  still waiting for %s after %s", cp1Name, elapsed.Round(time.Second))
	})); err != nil {
		return err
	}
	err = r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: "talos:bootstrap", Name: cp1Name, Detail: "etcd on the first control plane"},
		func(ctx context.Context) error { return c.Bootstrap(ctx, cp1, r.in.Env.Scale(bootstrapBudget)) })
	if err != nil {
		return err
	}
	r.in.Out.Info("bootstrapped %s in %s", cp1Name, time.Since(start).Round(time.Second))
	path, _ := phase.ClientFile(r.cfg, config.KubeconfigFile)
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: "file", Name: config.KubeconfigFile, Detail: "from " + cp1Name},
		func(ctx context.Context) error {
			data, err := c.Kubeconfig(ctx, cp1)
			if err != nil {
				return err
			}
			r.out.Bootstrapped = true
			return identity.WriteKubeconfig(path, data)
		})
}

// healthTargets are the addresses of the desired control planes and
// workers, what Talos's server-side health check is told to expect.
func (r *run) healthTargets() (cps, workers []string, err error) {
	for _, m := range r.desired {
		a, ok := r.address(m.Hostname)
		if !ok {
			return nil, nil, fmt.Errorf("no address known for %s", m.Hostname)
		}
		if m.Role == config.RoleControlPlane {
			cps = append(cps, a)
		} else {
			workers = append(workers, a)
		}
	}
	return cps, workers, nil
}

// health waits for Talos's server-side health and for every desired node
// to be Ready; Kubernetes readiness is the fallback when the Talos check
// fails twice.
func (r *run) health(ctx context.Context) error {
	cps, workers, err := r.healthTargets()
	if err != nil {
		return err
	}
	r.in.Out.Info("waiting for the cluster to be healthy")
	talosErr := r.talosHealth(ctx, cps, workers)
	path, _ := phase.ClientFile(r.cfg, config.KubeconfigFile)
	kc, err := r.kube(path)
	if err != nil {
		return err
	}
	names := make([]string, len(r.desired))
	for i, m := range r.desired {
		names[i] = m.Hostname
	}
	last := -1
	nodes, err := kc.WaitReady(ctx, names, r.in.Env.Scale(readyBudget), r.in.Env.Scale(readyPoll), func(ready, total int) {
		if ready != last {
			last = ready
			r.in.Out.Info("  %d of %d nodes Ready", ready, total)
		}
	})
	if err != nil {
		return fmt.Errorf("cluster is unhealthy after converge: %w", errors.Join(talosErr, err))
	}
	if talosErr != nil {
		// The final check may fall back to the Kubernetes API (§3.1 step
		// 15): every desired node is Ready.
		r.in.Out.Warn("talos health check failed (%v); every node is Ready in Kubernetes, accepting that", talosErr)
	}
	r.out.Up = true
	r.out.Nodes = nodes
	r.out.KubernetesEndpoint = "https://" + r.net.Kubernetes.Advertised + ":6443"
	r.in.Out.Info("kube api: %s", r.out.KubernetesEndpoint)
	r.in.Out.Info("talosctl: talosctl --talosconfig %s -e %s -n %s <cmd>", filepathOf(r.cfg, config.TalosconfigFile), cps[0], cps[0])
	r.in.Out.Info("kubectl: kubectl --kubeconfig %s get nodes", path)
	return nil
}

// healthAttempts is how often the final Talos health check is tried.
const healthAttempts = 2

// talosHealth runs Talos's server-side health check through the first
// control plane, against the internal VIP (I-A5), up to healthAttempts
// times.
func (r *run) talosHealth(ctx context.Context, cps, workers []string) error {
	c, err := r.talos(ctx, cps[0])
	if err != nil {
		return err
	}
	defer c.Close()
	for attempt := 1; ; attempt++ {
		err = c.Health(ctx, talosapi.HealthOptions{
			ControlPlanes: cps, Workers: workers,
			K8sEndpoint: vipString(r.net.Kubernetes.VIP),
			Timeout:     r.in.Env.Scale(healthBudget),
			Progress:    func(line string) { r.in.Out.Info("  %s", line) },
		})
		if err == nil || attempt == healthAttempts || ctx.Err() != nil {
			return err
		}
		r.in.Out.Warn("talos health check: %v; trying again", err)
	}
}

// progressEvery is the least time between two "still waiting" lines.
const progressEvery = 10 * time.Second

// throttle passes at most one progress report per progressEvery (wall
// time, whatever TALOSC_TIME_SCALE says), the first after progressEvery.
func throttle(report func(elapsed time.Duration)) func(elapsed time.Duration) {
	next := time.Now().Add(progressEvery)
	return func(elapsed time.Duration) {
		if now := time.Now(); now.After(next) {
			next = now.Add(progressEvery)
			report(elapsed)
		}
	}
}

func filepathOf(cfg *config.Cluster, name string) string {
	p, _ := phase.ClientFile(cfg, name)
	return p
}
