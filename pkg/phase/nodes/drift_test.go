package nodes_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/bootimage"
	"github.com/talosc/talosc/pkg/phase/network"
	"github.com/talosc/talosc/pkg/phase/nodes"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/provider/clouds"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// labDir is a converged-to-be cluster directory on a lab OpenStack of one
// control plane and one worker.
type labDir struct {
	lab *lab.Lab
	dir string
	env map[string]string
}

// newLabDir is a cluster directory on a lab OpenStack of one control
// plane and one worker.
func newLabDir(t *testing.T) *labDir {
	t.Helper()
	d := startLabDir(t, lab.Options{
		Provider:     lab.ProviderOpenStack,
		ClusterCIDR:  "127.18.41.0/24",
		ExternalCIDR: "127.205.41.0/24",
	}, "drift")
	d.edit(t, "  count: 3\n  flavor: talos.cp\n", "  count: 1\n  flavor: talos.cp\n")
	d.edit(t, "    count: 2\n    flavor: talos.worker\n", "    count: 1\n    flavor: talos.worker\n")
	return d
}

// startLabDir starts a lab (nodes booting in 100 ms, which needs the real
// kube-apiserver) and writes cluster name's directory for it, with the
// environment that points the phases at it.
func startLabDir(t *testing.T, o lab.Options, name string) *labDir {
	t.Helper()
	if os.Getenv("TALOSC_KUBE_APISERVER") == "" {
		t.Skip("needs TALOSC_KUBE_APISERVER (make kube-apiserver)")
	}
	o.NodesBoot = 100 * time.Millisecond
	l, err := lab.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	d := &labDir{lab: l, dir: t.TempDir(), env: map[string]string{
		phase.EnvTimeScale: "0.01",
	}}
	if _, err := l.WriteClusterDir(d.dir, name); err != nil {
		t.Fatal(err)
	}
	return d
}

// edit replaces old, which must be there, in cluster.yaml.
func (d *labDir) edit(t *testing.T, old, replacement string) {
	t.Helper()
	path := filepath.Join(d.dir, config.ClusterFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("cluster.yaml holds no %q:\n%s", old, data)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(replacement), 1), 0o600); err != nil {
		t.Fatal(err)
	}
}

// run runs action through the image, net and nodes phases in process, each
// reading the previous one's document, and returns the nodes section and
// the nodes phase's error and stderr; a failing earlier phase ends the run
// with its error. The lab's recorder holds the run's calls afterwards.
func (d *labDir) run(t *testing.T, action string) (state.Section, string, error) {
	t.Helper()
	return d.runReboot(t, action, false)
}

// runReboot is run with --reboot set as given.
func (d *labDir) runReboot(t *testing.T, action string, reboot bool) (state.Section, string, error) {
	t.Helper()
	d.lab.Recorder().Reset()
	doc, stderr, err := d.phases(t, action, reboot, nil, bootimage.Phase{}, network.Phase{})
	if err != nil {
		return state.Section{}, stderr, err
	}
	return d.nodes(t, action, reboot, doc)
}

// phases runs action (plan or converge) through ps in process, headed by
// the validation (tc-nodes validate), the first reading doc, each the
// previous one's document, and returns the last one's document; a failing
// phase ends the run with its error.
func (d *labDir) phases(t *testing.T, action string, reboot bool, doc []byte, ps ...phase.Phase) ([]byte, string, error) {
	t.Helper()
	for _, p := range append([]phase.Phase{preflight.WithValidation(nodes.Phase{})}, ps...) {
		var stdout, stderr bytes.Buffer
		o, act := d.options(reboot, doc, &stdout, &stderr), action
		if _, head := p.(phase.Validator); head {
			o.DryRun, act = action == phase.ActionPlan, phase.ActionValidate
		}
		if err := o.Run(t.Context(), p, act); err != nil {
			return stdout.Bytes(), stderr.String(), fmt.Errorf("tc-%s %s: %w", p.Name(), act, err)
		}
		doc = stdout.Bytes()
	}
	return doc, "", nil
}

// options are a phase's options on the lab, reading doc.
func (d *labDir) options(reboot bool, doc []byte, stdout, stderr *bytes.Buffer) *phase.Options {
	return &phase.Options{
		Dir:     d.dir,
		Connect: clouds.All(),
		Reboot:  reboot,
		Streams: cli.Streams{In: bytes.NewReader(doc), Out: stdout, ErrOut: stderr},
		Load:    config.Load,
		LookupEnv: func(k string) (string, bool) {
			v, ok := d.env[k]
			return v, ok
		},
	}
}

// nodes runs the nodes phase on doc and returns its section, stderr and
// error.
func (d *labDir) nodes(t *testing.T, action string, reboot bool, doc []byte) (state.Section, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := d.options(reboot, doc, &stdout, &stderr).Run(t.Context(), nodes.Phase{}, action)
	parsed, perr := state.Parse(stdout.Bytes())
	if perr != nil {
		t.Fatalf("tc-nodes %s wrote no document: %v (run error %v)\n%s", action, perr, err, stderr.String())
	}
	sec, ok, serr := parsed.Section(phase.Nodes)
	if serr != nil || !ok {
		t.Fatalf("tc-nodes %s: no nodes section (%v)", action, serr)
	}
	return sec, stderr.String(), err
}

// configChanges are the talos:machineconfig changes of a section.
func configChanges(sec state.Section) []state.Change {
	var out []state.Change
	for _, c := range sec.Plan {
		if c.Kind == nodes.KindMachineConfig {
			out = append(out, c)
		}
	}
	return out
}

// secretValues are the identity's secrets as they appear in a machine
// configuration.
func secretValues(t *testing.T, dir string) []string {
	t.Helper()
	id, err := identity.Load(filepath.Join(dir, config.TalosSecretsFile))
	if err != nil {
		t.Fatal(err)
	}
	b := id.Bundle()
	out := []string{b.Secrets.BootstrapToken, b.Secrets.SecretboxEncryptionSecret, b.TrustdInfo.Token, b.Cluster.Secret}
	for _, key := range [][]byte{b.Certs.OS.Key, b.Certs.K8s.Key, b.Certs.Etcd.Key, b.Certs.K8sAggregator.Key, b.Certs.K8sServiceAccount.Key} {
		out = append(out, base64.StdEncoding.EncodeToString(key))
	}
	return out
}

const sysctlPatch = `  config_patches:
    - |
      machine:
        sysctls:
          net.ipv4.ip_forward: "1"
`

// TestMachineConfigDrift: a freshly built cluster plans no machine-config
// change; after a talos.config_patches edit a plan shows exactly the patch,
// redacted, for every node and mutates nothing, and converge rolls it out
// (and builds a new worker beside it) so that nothing is left to plan.
func TestMachineConfigDrift(t *testing.T) {
	d := newLabDir(t)
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("first converge: %v\n%s", err, stderr)
	}

	sec, stderr, err := d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan of a converged cluster: %v\n%s", err, stderr)
	}
	if got := configChanges(sec); len(got) != 0 {
		t.Errorf("a freshly built cluster plans machine-config changes: %+v", got)
	}
	if reads := configReads(d.lab.Recorder().Calls()); reads != 2 {
		t.Errorf("the plan read %d running configurations, want 2 (one per node)", reads)
	}
	// A converge compares them once, in tc-nodes (the validation heading
	// the pipe only checks that every node answers).
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("converge of a converged cluster: %v\n%s", err, stderr)
	}
	if reads := configReads(d.lab.Recorder().Calls()); reads != 2 {
		t.Errorf("the converge read %d running configurations, want 2 (one per node, once)", reads)
	}

	d.edit(t, "talos:\n  version: "+lab.DefaultTalosVersion+"\n", "talos:\n  version: "+lab.DefaultTalosVersion+"\n"+sysctlPatch)
	sec, stderr, err = d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan with a config_patches edit: %v\n%s", err, stderr)
	}
	changes := configChanges(sec)
	if len(changes) != 2 || changes[0].Name != "drift-controlplane-01" || changes[1].Name != "drift-worker-01" {
		t.Fatalf("plan changes = %+v, want a talos:machineconfig update of both nodes", changes)
	}
	secrets := secretValues(t, d.dir)
	for _, c := range changes {
		if c.Action != state.ActionUpdate {
			t.Errorf("%s: action %s, want update", c.Name, c.Action)
		}
		if added, removed := changedLines(c.Diff); added != "+    sysctls:\n+        net.ipv4.ip_forward: \"1\"\n" || removed != "" {
			t.Errorf("%s: diff adds %q and removes %q, want exactly the sysctl:\n%s", c.Name, added, removed, c.Diff)
		}
		for _, s := range []string{"BEGIN", "key:", "token:"} {
			if strings.Contains(c.Diff, s) {
				t.Errorf("%s: diff holds %q:\n%s", c.Name, s, c.Diff)
			}
		}
		whole, _ := json.Marshal(c)
		for i, s := range secrets {
			if s != "" && strings.Contains(string(whole), s) {
				t.Errorf("%s: the change holds secret %d of talossecrets.yaml", c.Name, i)
			}
		}
	}

	for _, c := range d.lab.Recorder().Calls() {
		// Keystone issues tokens; schematics are content-addressed.
		if c.Mutating() && c.Service != labos.Keystone && c.Path != "/schematics" {
			t.Errorf("a plan made %s %s %s", c.Service, c.Method, c.Path)
		}
	}

	// A new worker beside the edit: converge applies the patch to both
	// nodes and builds the worker with it; nothing is left to plan.
	d.edit(t, "    count: 1\n    flavor: talos.worker\n", "    count: 2\n    flavor: talos.worker\n")
	sec, stderr, err = d.run(t, phase.ActionConverge)
	if err != nil {
		t.Fatalf("converge with a config_patches edit: %v\n%s", err, stderr)
	}
	if got := configChanges(sec); len(got) != 2 {
		t.Errorf("converge applied %+v, want both existing nodes", got)
	}
	sec, stderr, err = d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan after the rollout: %v\n%s", err, stderr)
	}
	if got := configChanges(sec); len(got) != 0 {
		t.Errorf("after the rollout, plan still changes %+v", got)
	}
}

// configReads counts the MachineConfig reads the nodes answered.
func configReads(calls []labnet.Call) int {
	n := 0
	for _, c := range calls {
		if c.Service == talosnode.ServiceName && strings.HasPrefix(c.Path, "/cosi.resource.State/Get?") && c.Status == 0 {
			n++
		}
	}
	return n
}

// changedLines are a unified diff's added and removed lines, headers left
// out.
func changedLines(diff string) (added, removed string) {
	for line := range strings.Lines(diff) {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		case strings.HasPrefix(line, "+"):
			added += line
		case strings.HasPrefix(line, "-"):
			removed += line
		}
	}
	return added, removed
}
