package nodes_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const (
	// bootstrapMethod is the recorded path prefix of a Bootstrap call.
	bootstrapMethod = "/machine.MachineService/Bootstrap"
	// kindBootstrap is the kind of a plan's bootstrap change.
	kindBootstrap = "talos:bootstrap"
)

// interruptedFirstRun is newLabDir after a first converge that stopped
// with every server booted and nothing bootstrapped: its Bootstrap was
// refused (the state a run killed before the bootstrap leaves).
func interruptedFirstRun(t *testing.T) *labDir {
	t.Helper()
	d := newLabDir(t)
	d.lab.Injector().Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: bootstrapMethod, Status: http.StatusForbidden}}})
	if _, stderr, err := d.run(t, phase.ActionConverge); err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Fatalf("first converge = %v, want it to fail at the bootstrap\n%s", err, stderr)
	}
	d.lab.Injector().Set(labnet.Knobs{})
	waitBooted(t, d)
	for _, n := range labNodes(t, d.lab) {
		if n.EtcdMember != 0 || n.Maintenance {
			t.Fatalf("after the first run %s: etcd member %d, maintenance %t; want configured, never bootstrapped", n.Hostname, n.EtcdMember, n.Maintenance)
		}
	}
	return d
}

// waitBooted waits until every node's Talos API is up (a worker's waits
// for a control plane's trustd).
func waitBooted(t *testing.T, d *labDir) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		up := 0
		ns := labNodes(t, d.lab)
		for _, n := range ns {
			if n.APIUp {
				up++
			}
		}
		if up == len(ns) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes booted: %+v", up, len(ns), ns)
		}
	}
}

// mutations are the calls of the last run that could change the cloud or
// the nodes (Keystone issues tokens; schematics are content-addressed).
func mutations(d *labDir) []string {
	var out []string
	for _, c := range d.lab.Recorder().Calls() {
		if c.Mutating() && c.Service != labos.Keystone && c.Path != "/schematics" {
			out = append(out, c.Service+" "+c.Method+" "+c.Path)
		}
	}
	return out
}

// bootstrapChanges are a section's bootstrap changes.
func bootstrapChanges(sec state.Section) int {
	n := 0
	for _, c := range sec.Plan {
		if c.Kind == kindBootstrap {
			n++
		}
	}
	return n
}

// convergedReady converges and checks that the run bootstrapped the
// cluster as an interrupted first run and every node is Ready.
func convergedReady(t *testing.T, d *labDir) {
	t.Helper()
	sec, stderr, err := d.run(t, phase.ActionConverge)
	if err != nil {
		t.Fatalf("converge after the interrupted run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "an interrupted first run, bootstrapping") || bootstrapChanges(sec) != 1 {
		t.Errorf("converge did not bootstrap as an interrupted first run (%d bootstrap changes):\n%s", bootstrapChanges(sec), stderr)
	}
	kc, err := kube.Load(filepath.Join(d.dir, config.KubeconfigFile), kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := kc.Nodes(t.Context())
	if err != nil || len(ns) != 2 {
		t.Fatalf("nodes %v, %v", ns, err)
	}
	for _, n := range ns {
		if !n.Ready {
			t.Errorf("node %s is not Ready", n.Name)
		}
	}
}

// planBootstraps plans and checks that the plan reports the interrupted
// first run and its bootstrap, changing nothing.
func planBootstraps(t *testing.T, d *labDir, also string) {
	t.Helper()
	sec, stderr, err := d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan after the interrupted run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "an interrupted first run, bootstrapping") || !strings.Contains(stderr, also) || bootstrapChanges(sec) != 1 {
		t.Errorf("plan: %d bootstrap changes, stderr:\n%s\nwant the interrupted first run, %q and its bootstrap", bootstrapChanges(sec), stderr, also)
	}
	if m := mutations(d); len(m) != 0 {
		t.Errorf("the plan made %q", m)
	}
}

// TestInterruptedFirstRunBootstraps (I-5): servers booted, the first
// converge stopped before the bootstrap and left no kubeconfig; the plan
// says it will bootstrap, the next converge bootstraps and every node
// ends Ready.
func TestInterruptedFirstRunBootstraps(t *testing.T) {
	d := interruptedFirstRun(t)
	if _, err := os.Stat(filepath.Join(d.dir, config.KubeconfigFile)); !os.IsNotExist(err) {
		t.Fatalf("the interrupted run left a kubeconfig (%v)", err)
	}
	planBootstraps(t, d, "data directory empty")
	convergedReady(t, d)
}

// TestInterruptedFirstRunStaleKubeconfig (I-5): the same with a
// kubeconfig recovered from the never-bootstrapped control plane (Talos
// serves one before bootstrap, and an older or killed run kept it): its
// API never answers, yet the converge bootstraps and replaces it.
func TestInterruptedFirstRunStaleKubeconfig(t *testing.T) {
	d := interruptedFirstRun(t)
	path := filepath.Join(d.dir, config.KubeconfigFile)
	stale := recoverKubeconfig(t, d)
	if err := identity.WriteKubeconfig(path, stale); err != nil {
		t.Fatal(err)
	}
	planBootstraps(t, d, "would replace the stale")
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, stale) {
		t.Errorf("the plan changed the kubeconfig (%v)", err)
	}
	convergedReady(t, d)
	if got, err := os.ReadFile(path); err != nil || bytes.Equal(got, stale) {
		t.Errorf("the stale kubeconfig was kept (%v)", err)
	}
}

// recoverKubeconfig fetches the kubeconfig the first control plane serves
// (whether or not it was bootstrapped), as a recovery does.
func recoverKubeconfig(t *testing.T, d *labDir) []byte {
	t.Helper()
	id, err := identity.Load(filepath.Join(d.dir, config.TalosSecretsFile))
	if err != nil {
		t.Fatal(err)
	}
	cp1 := controlPlaneAddress(t, d)
	c, err := talosapi.Dial(t.Context(), id, "drift", cp1, talosapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	data, err := c.Kubeconfig(t.Context(), cp1)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// controlPlaneAddress is the control plane's Talos address.
func controlPlaneAddress(t *testing.T, d *labDir) string {
	t.Helper()
	for _, n := range labNodes(t, d.lab) {
		if n.ControlPlane {
			return n.Address.String()
		}
	}
	t.Fatal("no control plane")
	return ""
}

// TestBootstrappedAPIDownRefused (I-6): a bootstrapped cluster whose
// Kubernetes API stopped answering is refused, with or without its
// kubeconfig, by plan and converge alike, and nothing is changed.
func TestBootstrappedAPIDownRefused(t *testing.T) {
	d := newLabDir(t)
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("first converge: %v\n%s", err, stderr)
	}
	boots := map[string]int{}
	for _, n := range labNodes(t, d.lab) {
		boots[n.Hostname] = n.Boots
	}
	if err := d.lab.KubeAPI("drift").SetServing(false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(d.dir, config.KubeconfigFile)
	for _, tc := range []struct {
		name, action string
		lost         bool
	}{
		{"plan", phase.ActionPlan, false},
		{"converge", phase.ActionConverge, false},
		{"converge without the kubeconfig", phase.ActionConverge, true},
		{"plan without the kubeconfig", phase.ActionPlan, true},
	} {
		if tc.lost {
			_ = os.Remove(path)
		}
		sec, stderr, err := d.run(t, tc.action)
		refused := err != nil && strings.Contains(err.Error(), "existing but unreachable") && strings.Contains(stderr, "etcd ran")
		if tc.action == phase.ActionPlan && tc.lost {
			refused = err == nil && strings.Contains(stderr, "would recover the kubeconfig") && bootstrapChanges(sec) == 0
		}
		if !refused {
			t.Errorf("%s: %v, want it refused as existing but unreachable\n%s", tc.name, err, stderr)
		}
		if m := mutations(d); len(m) != 0 {
			t.Errorf("%s made %q", tc.name, m)
		}
	}
	for _, n := range labNodes(t, d.lab) {
		if n.Boots != boots[n.Hostname] {
			t.Errorf("%s booted again (%d boots, %d before)", n.Hostname, n.Boots, boots[n.Hostname])
		}
	}
}

// TestUnreadableControlPlaneRefused: after an interrupted first run, a
// control plane whose Talos API does not answer leaves "was it ever
// bootstrapped" unknown: plan and converge refuse, naming what could not
// be read, and bootstrap nothing.
func TestUnreadableControlPlaneRefused(t *testing.T) {
	d := interruptedFirstRun(t)
	d.lab.Injector().Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/machine.MachineService/Version", Status: http.StatusServiceUnavailable}}})
	for _, action := range []string{phase.ActionPlan, phase.ActionConverge} {
		_, stderr, err := d.run(t, action)
		if err == nil || !strings.Contains(err.Error(), "cluster state unknown") || !strings.Contains(err.Error(), "drift-controlplane-01: talos API on") {
			t.Errorf("%s: %v, want it refused as unknown, naming the control plane\n%s", action, err, stderr)
		}
		if m := mutations(d); len(m) != 0 {
			t.Errorf("%s made %q", action, m)
		}
	}
	for _, n := range labNodes(t, d.lab) {
		if n.EtcdMember != 0 {
			t.Errorf("%s was bootstrapped", n.Hostname)
		}
	}
}
