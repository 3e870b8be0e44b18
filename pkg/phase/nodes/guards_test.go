package nodes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// Each test here pins one fail-closed guard of the nodes phase that no
// other -short test noticed removed (mutation testing, make mutate,
// found them).

// failingKube fails drains and the version read.
type failingKube struct {
	kubeAPI
	err error
}

func (k failingKube) Drain(context.Context, string, kube.DrainOptions) error { return k.err }

func (k failingKube) ServerVersion(context.Context) (string, error) { return "", k.err }

// A failed drain aborts the removal of a node that is Ready or whose
// state is unknown (it may be live, I-S4); only a NotReady one goes on.
func TestFailedDrainAbortsUnlessNotReady(t *testing.T) {
	t.Parallel()
	r, _ := fakeRun(t, false)
	r.clients.seams.openKube = func(string) (kubeAPI, error) {
		return failingKube{err: errors.New("eviction blocked by a PodDisruptionBudget")}, nil
	}
	for _, tc := range []struct {
		kube    kubeState
		aborted bool
	}{{kubeReady, true}, {kubeUnknown, true}, {kubeNotReady, false}} {
		d := removal{removalFacts: removalFacts{host: "t-worker-03", kube: tc.kube}}
		err := r.drainAction(d.host, drainFailed(r.in.Out, d)).fn(t.Context())
		if aborted := err != nil && strings.Contains(err.Error(), "aborting to protect a potentially live node"); aborted != tc.aborted {
			t.Errorf("node %s: err = %v, want aborted %t", tc.kube, err, tc.aborted)
		}
	}
}

// The running Kubernetes version must be read (I-13): configs are never
// generated against a guess.
func TestCheckVersionsRefusesAnUnknownKubernetesVersion(t *testing.T) {
	t.Parallel()
	r, _ := upgradeRun(t, false, nil)
	r.obs.inv = &provider.Inventory{}
	r.clients.seams.openKube = func(string) (kubeAPI, error) { return failingKube{err: errors.New("503 Service Unavailable")}, nil }
	if err := r.checkVersions(t.Context()); err == nil || !strings.Contains(err.Error(), "could not determine the running cluster's kubernetes version") {
		t.Errorf("err = %v", err)
	}
}

// An unanswered node list leaves which node runs which Kubernetes unknown:
// the Kubernetes upgrade refuses.
func TestKubeNodesRefusesAnUnansweredNodeList(t *testing.T) {
	t.Parallel()
	r, _ := fakeRun(t, false)
	r.obs.inv = &provider.Inventory{}
	r.obs.nodesErr = errors.New("kube list nodes: timed out after 10s")
	if _, _, err := r.kubeNodes(t.Context()); err == nil || !strings.Contains(err.Error(), "which nodes run which Kubernetes version is unknown; refusing") {
		t.Errorf("err = %v", err)
	}
}

// existingRun is fakeRun with every desired machine existing and listed by
// Kubernetes, and a Kubernetes API endpoint.
func existingRun(t *testing.T) *run {
	t.Helper()
	r, _ := fakeRun(t, false)
	inv := &provider.Inventory{}
	var nodes []kube.Node
	for _, m := range r.desired {
		inv.Machines = append(inv.Machines, provider.Machine{Hostname: m.Hostname, Role: m.Role})
		nodes = append(nodes, kube.Node{Name: m.Hostname})
	}
	net := r.obs.net
	net.Kubernetes = provider.Endpoint{VIP: netip.MustParseAddr("127.0.0.2"), Advertised: "127.0.0.2"}
	r.obs = newObserved(inv, net, provider.Image{}, nodes)
	return r
}

// An existing node without any address is refused, not skipped: its
// running configuration cannot be compared (I-V1).
func TestConfigDriftRefusesAnAddresslessNode(t *testing.T) {
	t.Parallel()
	r := existingRun(t)
	r.obs.net.Machines = slices.DeleteFunc(r.obs.net.Machines, func(a provider.MachineAddress) bool { return a.Hostname == "t-worker-02" })
	if _, err := r.configDrift(t.Context()); err == nil || !strings.Contains(err.Error(), "no address known for t-worker-02: its running configuration cannot be compared") {
		t.Errorf("err = %v", err)
	}
}

// An existing node Kubernetes does not list is refused, not skipped with a
// message (I-V2): its configuration, firewall included, would be left
// behind while the run (and a plan's exit code) claimed success.
func TestAppliableRefusesANodeKubernetesDoesNotList(t *testing.T) {
	t.Parallel()
	r := existingRun(t)
	if got, err := r.appliable(); err != nil || len(got) != 5 {
		t.Fatalf("all listed: %d, %v", len(got), err)
	}
	r.obs.nodes = slices.DeleteFunc(r.obs.nodes, func(n kube.Node) bool { return n.Name == "t-worker-02" })
	if _, err := r.appliable(); err == nil || !strings.Contains(err.Error(), "t-worker-02: not visible through kubeconfig, so its configuration cannot be rolled out; refusing") {
		t.Errorf("err = %v", err)
	}
}

// restartCloud restarts machines, rebooting them or not.
type restartCloud struct {
	provider.Cloud
	f         *upgradeTalos
	reboots   bool
	restarted []string
}

func (c *restartCloud) RestartMachine(_ context.Context, m provider.Machine, _ *provider.Plan) error {
	c.restarted = append(c.restarted, m.Hostname)
	if c.reboots {
		c.f.mu.Lock()
		c.f.boots[m.Hostname]++
		c.f.mu.Unlock()
	}
	return nil
}

// restartRun is upgradeRun with a restart of t-worker-01 to do: the fake
// run, the fake Talos, the cloud and the restart's op.
func restartRun(t *testing.T, reboots bool) (*run, *upgradeTalos, *restartCloud, op) {
	t.Helper()
	r, f := upgradeRun(t, false, nil)
	r.in.Reboot = true
	r.obs.inv = &provider.Inventory{Machines: []provider.Machine{{Hostname: "t-worker-01", Role: "worker", Status: "running"}}}
	cloud := &restartCloud{f: f, reboots: reboots}
	r.cloud = cloud
	o, ok := r.restartOp(config.Machine{Hostname: "t-worker-01", Role: "worker"})
	if !ok || len(o.actions) != 2 {
		t.Fatalf("restartOp = %+v, %t", o, ok)
	}
	return r, f, cloud, o
}

// A running machine whose boot id cannot be read is not restarted
// (--reboot, issue 15): the restart's action refuses before the provider
// is asked.
func TestRestartOpRefusesWithoutTheBootID(t *testing.T) {
	t.Parallel()
	r, f, cloud, o := restartRun(t, true)
	f.unknown = errors.New("rpc error: code = Unavailable")
	if err := r.executor().doAll(t.Context(), o); err == nil || !strings.Contains(err.Error(), "not restarting it") {
		t.Errorf("err = %v", err)
	}
	if len(cloud.restarted) != 0 {
		t.Errorf("restarted %v without its boot id", cloud.restarted)
	}
}

// A restart is settled by a new boot id: a machine still answering with
// the old one did not restart, whatever else answers.
func TestRestartOpSettledByANewBootID(t *testing.T) {
	t.Parallel()
	for _, reboots := range []bool{true, false} {
		r, _, _, o := restartRun(t, reboots)
		err := r.executor().doAll(t.Context(), o)
		if settled := err == nil; settled != reboots {
			t.Errorf("rebooted %t: settled %t (%v)", reboots, settled, err)
		}
	}
}

// applyTalos is upgradeTalos answering applies that reboot the node (or,
// when stuck, that say so and do not).
type applyTalos struct {
	*upgradeTalos
	stuck bool
}

func (f *applyTalos) ApplyConfiguration(_ context.Context, node string, _ []byte, _ bool) (talosapi.ApplyResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	host := f.names[node]
	res := talosapi.ApplyResult{Reboot: true, BootID: fmt.Sprint(f.boots[host])}
	if !f.stuck {
		f.boots[host]++
	}
	return res, nil
}

// A Talos 1.13 apply that reboots the node is settled by its new boot id:
// a node still on the old one did not apply its configuration yet.
func TestRebootingApplySettledByANewBootID(t *testing.T) {
	t.Parallel()
	for _, stuck := range []bool{false, true} {
		r, f := upgradeRun(t, false, nil)
		a := &applyTalos{upgradeTalos: f, stuck: stuck}
		r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return a, nil }
		m := r.desired[0]
		addr, _ := r.obs.address(m.Hostname)
		rebooted, err := r.applyConfig(t.Context(), m, addr, []byte("config"))
		if !rebooted || (err == nil) == stuck {
			t.Errorf("stuck %t: rebooted %t, err %v", stuck, rebooted, err)
		}
	}
}

// silentTalos never becomes reachable; its etcd would read as waiting.
type silentTalos struct{ fakeTalos }

func (f *silentTalos) WaitReachable(context.Context, string, time.Duration, time.Duration, func(time.Duration)) error {
	return errors.New("talos API not reachable")
}

func (f *silentTalos) EtcdState(context.Context, string) (talosapi.EtcdState, error) {
	return talosapi.EtcdState{Service: "Preparing"}, nil
}

// A control plane whose Talos API never answers leaves whether etcd ran
// unknown, never "never ran" (which would bootstrap a second etcd).
func TestUnreachableControlPlaneEtcdIsUnknown(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false)
	r.obs.inv = &provider.Inventory{Machines: []provider.Machine{{Hostname: "t-controlplane-01", Role: config.RoleControlPlane}}}
	r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) {
		return &silentTalos{fakeTalos{log: log}}, nil
	}
	if verdict, why := decideEtcd(r.readEtcd(t.Context())); verdict != etcdUnknown || !strings.Contains(why, "talos API not reachable") {
		t.Errorf("verdict %d (%s), want unknown", verdict, why)
	}
}
