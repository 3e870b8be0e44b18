package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// upgradeTalos is a fake Talos for upgrades: every node runs what nodes
// says; Upgrade installs (or fails for failInstall), Reboot boots the
// installed version (or the old one for rollback); every call is logged
// by node address.
type upgradeTalos struct {
	fakeTalos
	mu          sync.Mutex
	names       map[string]string // address -> hostname
	nodes       map[string]running
	installed   map[string]running
	failInstall string
	rollback    string
	members     int
	// lostInstalls answers that many installs as lost (having run them);
	// lostReboots that many reboots as lost (having done none).
	lostInstalls, lostReboots int
	boots                     map[string]int
	// unknown fails every Schematic, EtcdMembers and BootID call.
	unknown error
}

func (f *upgradeTalos) logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.log = append(*f.log, fmt.Sprintf(format, args...))
}

func (f *upgradeTalos) Upgrade(_ context.Context, node, installer string, _ func(string)) error {
	host := f.names[node]
	f.logf("install %s", host)
	if host == f.failInstall {
		return fmt.Errorf("%w: exit code 1", talosapi.ErrInstallFailed)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.installed[host] = running{talos: installer[strings.LastIndex(installer, ":")+1:], schematic: "new"}
	if f.lostInstalls > 0 {
		f.lostInstalls--
		return fmt.Errorf("unavailable (%w: the installer may have run)", talosapi.ErrAnswerLost)
	}
	return nil
}

func (f *upgradeTalos) Reboot(_ context.Context, node string) (string, error) {
	host := f.names[node]
	f.logf("reboot %s", host)
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := fmt.Sprint(f.boots[host])
	if f.lostReboots > 0 {
		f.lostReboots--
		return prev, fmt.Errorf("unavailable (%w: the node may be rebooting)", talosapi.ErrAnswerLost)
	}
	f.boots[host]++
	if v, ok := f.installed[host]; ok && host != f.rollback {
		f.nodes[host] = v
	}
	return prev, nil
}

func (f *upgradeTalos) BootID(_ context.Context, node string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unknown != nil {
		return "", f.unknown
	}
	return fmt.Sprint(f.boots[f.names[node]]), nil
}

func (f *upgradeTalos) WaitRebooted(_ context.Context, node, previous string, _, _ time.Duration, _ func(time.Duration)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fmt.Sprint(f.boots[f.names[node]]) == previous {
		return errors.New("timed out: same boot id")
	}
	return nil
}

func (f *upgradeTalos) WaitReachable(context.Context, string, time.Duration, time.Duration, func(time.Duration)) error {
	return nil
}

func (f *upgradeTalos) Version(_ context.Context, node string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[f.names[node]].talos, nil
}

func (f *upgradeTalos) Schematic(_ context.Context, node string) (string, error) {
	if f.unknown != nil {
		return "", f.unknown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes[f.names[node]].schematic, nil
}

func (f *upgradeTalos) EtcdForfeitLeadership(context.Context, string) error { return nil }

func (f *upgradeTalos) EtcdMembers(context.Context, string) ([]talosapi.Member, error) {
	if f.unknown != nil {
		return nil, f.unknown
	}
	out := make([]talosapi.Member, f.members)
	for i := range out {
		out[i] = talosapi.Member{ID: uint64(i + 1), Hostname: fmt.Sprintf("t-controlplane-%02d", i+1)}
	}
	return out, nil
}

// drainKube logs drains and uncordons.
type drainKube struct {
	kubeAPI
	t *upgradeTalos
}

func (k drainKube) Drain(_ context.Context, node string, _ kube.DrainOptions) error {
	k.t.logf("drain %s", node)
	return nil
}

func (k drainKube) Uncordon(_ context.Context, node string) error {
	k.t.logf("uncordon %s", node)
	return nil
}

func (k drainKube) WaitReady(context.Context, []string, time.Duration, time.Duration, func(int, int)) ([]kube.Node, error) {
	return nil, nil
}

// upgradeRun is fakeRun's cluster (3 control planes, 2 workers) running
// Talos v1.13.8 everywhere but where at says, pinned at v1.14.1.
func upgradeRun(t *testing.T, dryRun bool, at map[string]string, health ...error) (*run, *upgradeTalos) {
	t.Helper()
	r, log := fakeRun(t, dryRun, health...)
	env, err := phase.NewEnv(func(k string) (string, bool) { return "0.0001", k == phase.EnvTimeScale }, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.in.Env = env // the settle grace a rollback waits out is short
	r.cfg.Talos.Version = "v1.14.1"
	f := &upgradeTalos{fakeTalos: fakeTalos{log: log, health: health}, names: map[string]string{}, nodes: map[string]running{}, installed: map[string]running{}, members: 3, boots: map[string]int{}}
	for _, m := range r.desired {
		a, _ := r.obs.address(m.Hostname)
		f.names[a] = m.Hostname
		v := running{talos: "v1.13.8", schematic: "old"}
		if to, ok := at[m.Hostname]; ok {
			v = running{talos: to, schematic: "new"}
		}
		f.nodes[m.Hostname] = v
		r.obs.setRunning(m.Hostname, v)
	}
	r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return f, nil }
	r.clients.seams.openKube = func(string) (kubeAPI, error) { return drainKube{t: f}, nil }
	return r, f
}

// upgradeOps are the upgrades of every node not yet at v1.14.1.
func upgradeOps(r *run) []op {
	var ops []op
	for _, m := range r.desired {
		cur, _ := r.obs.runningOf(m.Hostname)
		if cur.talos == "v1.14.1" {
			continue
		}
		a, _ := r.obs.address(m.Hostname)
		ops = append(ops, r.talosUpgradeOp(talosUpgrade{machine: m, address: a, from: cur, to: "v1.14.1", installer: "f.test/installer/new:v1.14.1", schematic: "new"}))
	}
	return ops
}

func upgradeRollout() policy {
	return policy{what: "upgrading", order: workersByPool, barrier: barrier{before: true, between: true, afterLast: true}}
}

// nodeSteps is each host's install, drain, reboot, uncordon.
func nodeSteps(hosts ...string) []string {
	var out []string
	for _, h := range hosts {
		out = append(out, "install "+h, "drain "+h, "reboot "+h, "uncordon "+h)
	}
	return out
}

func TestTalosUpgradeOneAtATime(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	if err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r)); err != nil {
		t.Fatal(err)
	}
	var want []string
	want = append(want, "health")
	for _, cp := range []string{"t-controlplane-01", "t-controlplane-02", "t-controlplane-03"} {
		want = append(want, nodeSteps(cp)...)
		want = append(want, "health")
	}
	want = append(want, nodeSteps("t-worker-01", "t-worker-02")...)
	if d := cmp.Diff(want, *f.log); d != "" {
		t.Errorf("control planes one at a time with the barrier, then workers one at a time (-want +got):\n%s", d)
	}
	for _, m := range r.desired {
		if v, _ := r.obs.runningOf(m.Hostname); v.talos != "v1.14.1" {
			t.Errorf("%s recorded as running %v", m.Hostname, v)
		}
	}
}

func TestTalosUpgradeWorkersMaxUnavailable(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, map[string]string{"t-controlplane-01": "v1.14.1", "t-controlplane-02": "v1.14.1", "t-controlplane-03": "v1.14.1"})
	r.cfg.Workers[0].MaxUnavailableNodes = 2
	if err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r)); err != nil {
		t.Fatal(err)
	}
	// Both workers at once, in lockstep: both installs before either drain.
	got := strings.Join(*f.log, ",")
	if !strings.Contains(got, "install t-worker-0") || strings.Index(got, "drain") < strings.LastIndex(got, "install") {
		t.Errorf("two workers at a time want both installs first: %s", got)
	}
}

func TestTalosUpgradeFailedInstallStops(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	f.failInstall = "t-controlplane-02"
	err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r))
	if !errors.Is(err, talosapi.ErrInstallFailed) || !strings.Contains(err.Error(), "stopping the rollout before another node is touched") {
		t.Fatalf("err = %v", err)
	}
	want := append(append([]string{"health"}, nodeSteps("t-controlplane-01")...), "health", "install t-controlplane-02")
	if d := cmp.Diff(want, *f.log); d != "" {
		t.Errorf("nothing after the failed install (-want +got):\n%s", d)
	}
}

func TestTalosUpgradeRollbackStops(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	f.rollback = "t-controlplane-01"
	err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r))
	if err == nil || !strings.Contains(err.Error(), "t-controlplane-01 came back on v1.13.8 (schematic old), not v1.14.1 (schematic new): Talos rolled the upgrade back") {
		t.Fatalf("err = %v", err)
	}
	if d := cmp.Diff([]string{"health", "install t-controlplane-01", "drain t-controlplane-01", "reboot t-controlplane-01"}, *f.log); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// I-R6: cp-01 reached the target in a killed run; the cluster must be
// healthy before cp-02 is touched.
func TestTalosUpgradeResumeBarrier(t *testing.T) {
	t.Parallel()
	down := errors.New("etcd: 1 member unhealthy")
	r, f := upgradeRun(t, false, map[string]string{"t-controlplane-01": "v1.14.1"}, down, down)
	err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r))
	if err == nil || !strings.Contains(err.Error(), "cluster unhealthy before touching t-controlplane-02; aborting rollout") {
		t.Fatalf("err = %v", err)
	}
	if d := cmp.Diff([]string{"health", "health"}, *f.log); d != "" {
		t.Errorf("nothing touched (-want +got):\n%s", d)
	}
}

func TestTalosUpgradePlanOnlyRecords(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, true, nil)
	if err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r)); err != nil {
		t.Fatal(err)
	}
	if len(*f.log) != 0 {
		t.Errorf("a plan called %v", *f.log)
	}
	changes := r.plan.Changes()
	if len(changes) != 4*5 || changes[0].Detail != "upgrade v1.13.8 -> v1.14.1, installer f.test/installer/new:v1.14.1" || changes[0].Name != "t-controlplane-01" {
		t.Errorf("plan = %+v", changes)
	}
}

func TestEtcdAllowsUpgrade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		members int
		refused string
	}{{3, ""}, {1, ""}, {2, "etcd has 2 members, and one rebooting loses quorum"}} {
		r, f := upgradeRun(t, false, nil)
		f.members = tc.members
		ups := []talosUpgrade{{machine: config.Machine{Hostname: "t-controlplane-01", Role: config.RoleControlPlane}}}
		err := r.survivor().allowsUpgrade(t.Context(), ups)
		if (tc.refused == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%d members: err = %v, want %q", tc.members, err, tc.refused)
		}
	}
}

// Every control plane reached the target in a killed run: the cluster must
// be healthy before the first worker is touched.
func TestTalosUpgradeResumeBarrierBeforeWorkers(t *testing.T) {
	t.Parallel()
	down := errors.New("etcd: 1 member unhealthy")
	at := map[string]string{"t-controlplane-01": "v1.14.1", "t-controlplane-02": "v1.14.1", "t-controlplane-03": "v1.14.1"}
	r, f := upgradeRun(t, false, at, down, down)
	err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r))
	if err == nil || !strings.Contains(err.Error(), "cluster unhealthy before touching t-worker-01; aborting rollout") {
		t.Fatalf("err = %v", err)
	}
	if d := cmp.Diff([]string{"health", "health"}, *f.log); d != "" {
		t.Errorf("nothing touched (-want +got):\n%s", d)
	}
}

// A lost install answer runs the installer again; a lost reboot answer
// with no reboot following asks again: the upgrade completes.
func TestTalosUpgradeLostAnswers(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	f.lostInstalls, f.lostReboots = 1, 1
	ops := upgradeOps(r)[:1]
	if err := r.executor().execute(t.Context(), upgradeRollout(), ops); err != nil {
		t.Fatal(err)
	}
	want := []string{"health", "install t-controlplane-01", "install t-controlplane-01", "drain t-controlplane-01", "reboot t-controlplane-01", "reboot t-controlplane-01", "uncordon t-controlplane-01", "health"}
	if d := cmp.Diff(want, *f.log); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if f.boots["t-controlplane-01"] != 1 {
		t.Errorf("rebooted %d times, want once", f.boots["t-controlplane-01"])
	}
}

// Reboot requests refused on the way twice in a row (CI's 5 % of 503s
// did that to a reinstall) are asked for a third time; a reboot lost
// every time fails the rollout, never reads as done.
func TestTalosUpgradeRebootLostRepeatedly(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	f.lostReboots = rebootAttempts - 1
	if err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r)[:1]); err != nil {
		t.Fatal(err)
	}
	if f.boots["t-controlplane-01"] != 1 {
		t.Errorf("rebooted %d times, want once", f.boots["t-controlplane-01"])
	}
	r, f = upgradeRun(t, false, nil)
	f.lostReboots = rebootAttempts
	err := r.executor().execute(t.Context(), upgradeRollout(), upgradeOps(r)[:1])
	if err == nil || !errors.Is(err, talosapi.ErrAnswerLost) || f.boots["t-controlplane-01"] != 0 {
		t.Errorf("every reboot lost: err %v, %d boots; want the lost answer, no boot", err, f.boots["t-controlplane-01"])
	}
}

// A guard that cannot decide refuses: an unreadable etcd member list
// refuses a control-plane upgrade, and a node whose schematic cannot be
// read refuses the run (whether it needs an upgrade is unknown).
func TestTalosUpgradeUnknownRefuses(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	f.unknown = errors.New("etcdserver: no leader")
	ups := []talosUpgrade{{machine: config.Machine{Hostname: "t-controlplane-01", Role: config.RoleControlPlane}}}
	if err := r.survivor().allowsUpgrade(t.Context(), ups); err == nil || !strings.Contains(err.Error(), "the etcd member list could not be read") {
		t.Errorf("etcdAllowsUpgrade with no member list = %v", err)
	}
	r.obs.inv = &provider.Inventory{}
	for _, m := range r.desired {
		r.obs.inv.Machines = append(r.obs.inv.Machines, provider.Machine{Hostname: m.Hostname})
	}
	r.obs.running = nil
	err := r.readRunning(t.Context(), false)
	if err == nil || !strings.Contains(err.Error(), "5 node(s) did not say which Talos they run") {
		t.Errorf("readRunning with unreadable schematics = %v", err)
	}
	if len(r.obs.running) != 0 {
		t.Errorf("readRunning recorded %v for nodes it could not read", r.obs.running)
	}
}

// A restart is settled by a new boot id: a running machine whose boot id
// cannot be read is not restarted (unknown never reads as "it will be
// seen rebooting"); a stopped one needs none.
func TestRestartNeedsTheBootIDOfARunningMachine(t *testing.T) {
	t.Parallel()
	r, f := upgradeRun(t, false, nil)
	m := r.desired[0]
	if id, err := r.bootIDBefore(t.Context(), m, provider.Machine{Status: "running"}); err != nil || id != "0" {
		t.Errorf("running, readable: %q, %v; want its boot id", id, err)
	}
	f.unknown = errors.New("rpc error: code = Unavailable")
	if _, err := r.bootIDBefore(t.Context(), m, provider.Machine{Status: "running"}); err == nil || !strings.Contains(err.Error(), "not restarting it") {
		t.Errorf("running, unreadable: %v; want a refusal", err)
	}
	for _, stopped := range []string{"stopped", "SHUTOFF"} {
		if id, err := r.bootIDBefore(t.Context(), m, provider.Machine{Status: stopped, Stopped: true}); err != nil || id != "" {
			t.Errorf("%s: %q, %v; want no boot id and no refusal", stopped, id, err)
		}
	}
}
