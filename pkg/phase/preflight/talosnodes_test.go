package preflight

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/ui"
)

// fastInput is a run's input at a time scale that makes validation's
// waits milliseconds.
func fastInput(t *testing.T, cfg *config.Cluster) *phase.Input {
	t.Helper()
	env, err := phase.NewEnv(func(k string) (string, bool) { return "0.0001", k == phase.EnvTimeScale }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &phase.Input{Config: cfg, Out: ui.New(io.Discard, nil), Env: env}
}

// threeNodes is a 1+2 cluster named t.
func threeNodes() *config.Cluster {
	return &config.Cluster{Name: "t", ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: 1}, Workers: config.Pools{{Name: "worker", Count: 2}}}
}

// fakeKube answers the probe and lists nodes (from lists, one per call,
// the last repeated) or fails.
type fakeKube struct {
	lists    [][]kube.Node
	nodesErr error
	calls    int
}

func (f *fakeKube) Probe(context.Context, int, time.Duration) (bool, error) { return true, nil }

func (f *fakeKube) Nodes(context.Context) ([]kube.Node, error) {
	f.calls++
	if f.nodesErr != nil {
		return nil, f.nodesErr
	}
	return f.lists[min(f.calls, len(f.lists))-1], nil
}

func (f *fakeKube) ServerVersion(context.Context) (string, error) { return "v1.34.1", nil }

// fakeTalos answers Version for every node but the silent ones, and the
// rebooting ones until they were waited for.
type fakeTalos struct {
	mu        sync.Mutex
	silent    map[string]bool
	rebooting map[string]bool
}

func (f *fakeTalos) Version(_ context.Context, node string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.silent[node] || f.rebooting[node] {
		return "", errors.New("connection refused")
	}
	return "v1.13.8", nil
}

func (f *fakeTalos) WaitReachable(_ context.Context, node string, _, _ time.Duration, _ func(time.Duration)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.silent[node] {
		return errors.New("still silent")
	}
	delete(f.rebooting, node)
	return nil
}

// An existing machine the inventory gives no address is asked Talos at
// its Node's InternalIP; without one it cannot be checked, whatever its
// provider status (I-V1: a stopped VM is not skipped unchecked; the
// nodes phase could not read it before compute would start it either).
func TestTargetsOfAddresslessMachines(t *testing.T) {
	t.Parallel()
	inv := &provider.Inventory{Machines: []provider.Machine{
		{Hostname: "t-controlplane-01", Address: netip.MustParseAddr("127.0.0.10"), Status: "running"},
		{Hostname: "t-worker-01", Status: "running"},
		{Hostname: "t-worker-02", Status: "stopped"},
	}}
	for _, tc := range []struct {
		name    string
		nodes   []kube.Node
		addrs   []string
		unknown string
	}{
		{"resolved through the Node's InternalIP", []kube.Node{{Name: "t-controlplane-01"}, {Name: "t-worker-01", InternalIP: "127.0.0.21"}, {Name: "t-worker-02", InternalIP: "127.0.0.22"}}, []string{"127.0.0.21", "127.0.0.22"}, ""},
		{"a silent agent and no InternalIP", []kube.Node{{Name: "t-controlplane-01"}, {Name: "t-worker-01"}, {Name: "t-worker-02", InternalIP: "127.0.0.22"}}, []string{"127.0.0.22"}, `t-worker-01 (no address: neither the provider nor a Kubernetes Node gives one; provider status "running")`},
		{"a stopped VM that never registered", []kube.Node{{Name: "t-controlplane-01"}, {Name: "t-worker-01", InternalIP: "127.0.0.21"}}, []string{"127.0.0.21"}, `t-worker-02 (no address: neither the provider nor a Kubernetes Node gives one; provider status "stopped")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := targetsOf(threeNodes(), inv, tc.nodes, "127.0.0.10")
			if got.endpointHost != "t-controlplane-01" || !cmp.Equal(got.addrs, tc.addrs) || strings.Join(got.unknown, "; ") != tc.unknown {
				t.Errorf("targets = %+v, want addrs %v and unknown %q", got, tc.addrs, tc.unknown)
			}
		})
	}
}

// talosNodes refuses an up cluster with a machine it cannot check before
// it dials anything (I-V1).
func TestTalosNodesRefusesAnUncheckableMachine(t *testing.T) {
	t.Parallel()
	inv := &provider.Inventory{Machines: []provider.Machine{
		{Hostname: "t-controlplane-01", Address: netip.MustParseAddr("127.0.0.10")},
		{Hostname: "t-worker-01", Status: "stopped"},
	}}
	l := &view{up: true, endpoint: "127.0.0.10", nodes: []kube.Node{{Name: "t-controlplane-01"}}}
	err := l.talosNodes(t.Context(), fastInput(t, threeNodes()), &fakeKube{}, inv)
	if err == nil || !strings.Contains(err.Error(), "1 existing machine(s) cannot be checked while the Kubernetes API answers") || !strings.Contains(err.Error(), "t-worker-01") {
		t.Errorf("err = %v", err)
	}
}

// A node that does not answer Talos, even after a reboot's time, refuses
// the run (I-V1); the answering ones are read.
func TestReadVersionsRefusesASilentNode(t *testing.T) {
	t.Parallel()
	targets := talosTargets{endpointHost: "t-controlplane-01", nodes: []nodeVersion{{host: "t-worker-01"}, {host: "t-worker-02"}}, addrs: []string{"127.0.0.21", "127.0.0.22"}}
	l := &view{endpoint: "127.0.0.10"}
	err := l.readVersions(t.Context(), fastInput(t, threeNodes()), &fakeTalos{silent: map[string]bool{"127.0.0.22": true}}, targets)
	if err == nil || !strings.Contains(err.Error(), "1 existing node(s) do not answer the Talos API, so their state is unknown; refusing") || !strings.Contains(err.Error(), "t-worker-02 (connection refused)") {
		t.Errorf("err = %v", err)
	}
	l = &view{endpoint: "127.0.0.10"}
	if err := l.readVersions(t.Context(), fastInput(t, threeNodes()), &fakeTalos{rebooting: map[string]bool{"127.0.0.22": true}}, targets); err != nil || len(l.talos) != 3 || l.talos[0].host != "t-controlplane-01" || l.talos[2].version != "v1.13.8" {
		t.Errorf("all answer, one after its reboot: err %v, versions %+v", err, l.talos)
	}
}

// A cluster whose machines can all be checked goes on to the Talos API
// (here: to load the identity, which this directory lacks).
func TestTalosNodesChecksEveryAddressedMachine(t *testing.T) {
	t.Parallel()
	cfg := threeNodes()
	cfg.Dir = t.TempDir()
	inv := &provider.Inventory{Machines: []provider.Machine{{Hostname: "t-controlplane-01", Address: netip.MustParseAddr("127.0.0.10")}}}
	l := &view{up: true, endpoint: "127.0.0.10", nodes: []kube.Node{{Name: "t-controlplane-01"}}}
	err := l.talosNodes(t.Context(), fastInput(t, cfg), &fakeKube{}, inv)
	if err == nil || strings.Contains(err.Error(), "cannot be checked") || !strings.Contains(err.Error(), "talossecrets") {
		t.Errorf("err = %v, want the identity's load error", err)
	}
}

// An existing node Kubernetes does not list refuses validation, which
// runs before the network phase changes the security group (I-V2:
// the nodes phase would skip its configuration, firewall included);
// one that registers within the wait is fine.
func TestAwaitListedRefusesANodeKubernetesDoesNotList(t *testing.T) {
	t.Parallel()
	without := []kube.Node{{Name: "t-controlplane-01"}, {Name: "t-worker-01"}}
	with := append(slices.Clone(without), kube.Node{Name: "t-worker-02"})
	l := &view{}
	err := l.awaitListed(t.Context(), fastInput(t, threeNodes()), &fakeKube{lists: [][]kube.Node{without}}, []string{"t-worker-02"})
	if err == nil || !strings.Contains(err.Error(), "1 existing node(s) answer Talos but Kubernetes does not list them") || !strings.Contains(err.Error(), "t-worker-02") {
		t.Errorf("never listed: %v", err)
	}
	kc := &fakeKube{lists: [][]kube.Node{without, with}}
	if err := l.awaitListed(t.Context(), fastInput(t, threeNodes()), kc, []string{"t-worker-02"}); err != nil || len(l.nodes) != 3 {
		t.Errorf("registered meanwhile: %v (nodes %v)", err, l.nodes)
	}
	targets := targetsOf(threeNodes(), &provider.Inventory{Machines: []provider.Machine{
		{Hostname: "t-controlplane-01", Address: netip.MustParseAddr("127.0.0.10")},
		{Hostname: "t-worker-02", Address: netip.MustParseAddr("127.0.0.22")},
	}}, without, "127.0.0.10")
	if !cmp.Equal(targets.unlisted, []string{"t-worker-02"}) {
		t.Errorf("unlisted = %v", targets.unlisted)
	}
}

// An API that answered the probe but not the node list refuses (it could
// hide what a converge would remove).
func TestReadKubeRefusesAnUnlistedAPI(t *testing.T) {
	t.Parallel()
	l := &view{}
	err := l.readKube(t.Context(), fastInput(t, threeNodes()), &fakeKube{nodesErr: errors.New("etcdserver: request timed out")})
	if err == nil || !strings.Contains(err.Error(), "the Kubernetes API answered but its nodes could not be listed (etcdserver: request timed out); refusing") {
		t.Errorf("err = %v", err)
	}
}

// Removing nodes needs a live API: machines cluster.yaml no longer
// describes while the API does not answer are refused.
func TestCheckRemovalsNeedALiveAPI(t *testing.T) {
	t.Parallel()
	inv := &provider.Inventory{Machines: []provider.Machine{{Hostname: "t-controlplane-01"}, {Hostname: "t-worker-01"}, {Hostname: "t-worker-02"}, {Hostname: "t-worker-03"}}}
	in := fastInput(t, threeNodes())
	if _, err := checkRemovals(in, inv, &view{}); err == nil || !strings.Contains(err.Error(), "1 machine(s) exist that cluster.yaml no longer describes (t-worker-03), but the cluster's Kubernetes API does not answer") {
		t.Errorf("API down: %v", err)
	}
	if names, err := checkRemovals(in, inv, &view{up: true}); err != nil || !cmp.Equal(names, []string{"t-worker-03"}) {
		t.Errorf("API up: %v, %v", names, err)
	}
}
