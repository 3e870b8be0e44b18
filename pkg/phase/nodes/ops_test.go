package nodes

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
	"github.com/talosc/talosc/pkg/ui"
)

// fakeTalos answers Health from a script and records the calls; every
// other method is unused by the executor.
type fakeTalos struct {
	talosAPI
	mu     sync.Mutex
	log    *[]string
	health []error // the answers of successive Health calls; nil after
}

func (f *fakeTalos) Health(context.Context, talosapi.HealthOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.log = append(*f.log, "health")
	if len(f.health) == 0 {
		return nil
	}
	err := f.health[0]
	f.health = f.health[1:]
	return err
}

func (f *fakeTalos) Close() error { return nil }

// fakeRun is a run of a 3 control plane + 2 worker cluster with addresses,
// whose Talos session is fake.
func fakeRun(t *testing.T, dryRun bool, health ...error) (*run, *[]string) {
	t.Helper()
	cfg := &config.Cluster{Name: "t", ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: 3}, Workers: config.Pools{{Name: "worker", Count: 2}}}
	env, err := phase.NewEnv(func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := &phase.Input{Config: cfg, DryRun: dryRun, Out: ui.New(io.Discard, nil), Env: env}
	log := &[]string{}
	r := &run{in: in, cfg: cfg, plan: &provider.Plan{DryRun: dryRun}, desired: cfg.Hostnames(), id: &identity.Identity{}}
	r.clients = newClients(cfg, seams{dialTalos: func(context.Context, *identity.Identity, string, string) (talosAPI, error) {
		return &fakeTalos{log: log, health: health}, nil
	}})
	net := &provider.NetworkResult{}
	for i, m := range r.desired {
		net.Machines = append(net.Machines, provider.MachineAddress{Hostname: m.Hostname, Address: netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)})})
	}
	r.obs = newObserved(nil, net, provider.Image{}, nil)
	return r, log
}

// recordingOps are one-action ops on every desired node that log their
// host when they run.
func recordingOps(r *run, log *[]string) []op {
	var mu sync.Mutex
	var ops []op
	for _, m := range r.desired {
		ops = append(ops, op{host: m.Hostname, controlPlane: m.Role == config.RoleControlPlane, actions: []action{{
			change: &state.Change{Action: state.ActionUpdate, Kind: KindMachineConfig, Name: m.Hostname},
			fn: func(context.Context) error {
				mu.Lock()
				*log = append(*log, m.Hostname)
				mu.Unlock()
				return nil
			},
		}}})
	}
	return ops
}

func TestExecuteControlPlanesOneAtATimeWithBarrier(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false)
	if err := r.executor().execute(t.Context(), policy{what: "applying", barrier: barrier{before: true, between: true, afterLast: true}}, recordingOps(r, log)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(*log, " ")
	want := "health t-controlplane-01 health t-controlplane-02 health t-controlplane-03 health "
	if !strings.HasPrefix(got, want) {
		t.Fatalf("order = %q, want it to start %q", got, want)
	}
	if rest := strings.Fields(strings.TrimPrefix(got, want)); len(rest) != 2 || !strings.Contains(got, "t-worker-01") || !strings.Contains(got, "t-worker-02") {
		t.Errorf("workers after the control planes, no barrier between them: %q", rest)
	}
}

func TestExecuteUnhealthyControlPlaneStopsTheRollout(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false, nil, errors.New("etcd unhealthy"), errors.New("etcd unhealthy"))
	err := r.executor().execute(t.Context(), policy{what: "applying the configuration of", barrier: barrier{between: true, afterLast: true}}, recordingOps(r, log))
	if err == nil || !strings.Contains(err.Error(), "cluster unhealthy after applying the configuration of t-controlplane-02; stopping the rollout") {
		t.Fatalf("err = %v", err)
	}
	if d := cmp.Diff([]string{"t-controlplane-01", "health", "t-controlplane-02", "health", "health"}, *log); d != "" {
		t.Errorf("nothing after the unhealthy control plane may be touched (-want +got):\n%s", d)
	}
}

func TestExecuteUnhealthyBeforeTouching(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false, errors.New("down"), errors.New("down"))
	err := r.executor().execute(t.Context(), policy{what: "applying", barrier: barrier{before: true, between: true}}, recordingOps(r, log))
	if err == nil || !strings.Contains(err.Error(), "cluster unhealthy before touching t-controlplane-01; aborting rollout") {
		t.Fatalf("err = %v", err)
	}
	if d := cmp.Diff([]string{"health", "health"}, *log); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestExecuteScaleDownNoBarrierAfterLast(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false)
	ops := recordingOps(r, log)[1:3] // two control planes
	if err := r.executor().execute(t.Context(), policy{what: "removing control plane", barrier: barrier{between: true}}, ops); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"t-controlplane-02", "health", "t-controlplane-03"}, *log); d != "" {
		t.Errorf("health between control-plane removals only (I-S11) (-want +got):\n%s", d)
	}
}

func TestExecuteDryRunOnlyRecords(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, true)
	if err := r.executor().execute(t.Context(), policy{what: "applying", barrier: barrier{before: true, between: true, afterLast: true}}, recordingOps(r, log)); err != nil {
		t.Fatal(err)
	}
	if len(*log) != 0 {
		t.Errorf("a dry run ran %v", *log)
	}
	var names []string
	for _, c := range r.plan.Changes() {
		names = append(names, c.Name)
	}
	if d := cmp.Diff([]string{"t-controlplane-01", "t-controlplane-02", "t-controlplane-03", "t-worker-01", "t-worker-02"}, names); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
}

func TestExecuteSettledSkipsBarrierForLiveChanges(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false)
	ops := recordingOps(r, log)[:3]
	ops[1].settled = func() bool { return true }  // it rebooted
	ops[0].settled = func() bool { return false } // live
	ops[2].settled = func() bool { return false }
	if err := r.executor().execute(t.Context(), policy{what: "applying", barrier: barrier{between: true, afterLast: true}}, ops); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"t-controlplane-01", "t-controlplane-02", "health", "t-controlplane-03"}, *log); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// A worker pass asks for the Talos session from many goroutines, maybe
// before anything dialled it: one session is dialled and shared.
func TestTalosSessionDialledOnce(t *testing.T) {
	t.Parallel()
	r, log := fakeRun(t, false)
	var mu sync.Mutex
	dials := 0
	r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return &fakeTalos{log: log}, nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := r.clients.talosSession(t.Context(), r.id, r.obs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if dials != 1 {
		t.Errorf("dialled %d sessions, want 1", dials)
	}
}
