package openstack_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// lostAnswers are the ways a proxy loses the answer of an applied request.
var lostAnswers = map[string]labnet.Fault{
	"502":   {Status: http.StatusBadGateway, After: true},
	"504":   {Status: http.StatusGatewayTimeout, After: true},
	"reset": {Reset: true, After: true},
	"hang":  {Hang: true, After: true},
}

// lostOptions are the client options of a lab whose answers get lost: a
// hang ends at a short per-request timeout.
func lostOptions(how string) openstack.Options {
	if how == "hang" {
		return openstack.Options{RequestTimeout: time.Second}
	}
	return openstack.Options{}
}

// faultFreeNetwork is the whole inventory a fault-free reconcile leaves.
func faultFreeNetwork(t *testing.T) inventory.Snapshot {
	t.Helper()
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	return l.lab.Snapshot()
}

// lostCall reports whether the lab lost the answer of an applied request.
func lostCall(rec *labnet.Recorder) bool {
	for _, c := range rec.Calls() {
		if c.Lost {
			return true
		}
	}
	return false
}

func TestReconcileNetwork_LostAnswersLeaveWhatAFaultFreeRunDoes(t *testing.T) {
	t.Parallel()
	want := faultFreeNetwork(t)
	creates := []struct {
		method, path string
		nth          int
	}{
		{"POST", "/v2.0/security-groups", 1},
		{"POST", "/v2.0/security-group-rules", 3},
		{"POST", "/v2.0/networks", 1},
		{"POST", "/v2.0/subnets", 1},
		{"POST", "/v2.0/routers", 1},
		{"PUT", "/v2.0/routers/", 2}, // the interface (the first PUT tags the router)
		{"POST", "/v2.0/ports", 1},   // a reserved port
		{"POST", "/v2.0/ports", 5},   // a machine port, among concurrent ones
		{"POST", "/v2.0/floatingips", 2},
		{"PUT", "/v2.0/networks/", 1}, // the tags
	}
	for _, c := range creates {
		for how, f := range lostAnswers {
			t.Run(fmt.Sprintf("%s %s #%d %s", c.method, c.path, c.nth, how), func(t *testing.T) {
				t.Parallel()
				f.Service, f.Method, f.PathPrefix, f.Nth = labos.Neutron, c.method, c.path, c.nth
				l := newNetLab(t, labos.Config{Injector: labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{f}})}, lostOptions(how), defaultNet)
				if _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); err != nil {
					t.Fatalf("reconcile: %v\n%s", err, l.logs)
				}
				if !lostCall(l.rec) {
					t.Fatal("no answer was lost: the fault matched nothing")
				}
				if diff := inventory.Diff(want, l.lab.Snapshot()); len(diff) != 0 {
					t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
				}
				if _, changes := l.reconcile(t, false); len(changes) != 0 {
					t.Errorf("rerun still changes:\n%s", strings.Join(changeNames(changes), "\n"))
				}
			})
		}
	}
}

// killAt plays a talosc process that dies (SIGKILL, or Ctrl-C with
// dead == false) just after the lab answered the first request matching
// method and path suffix (before sending it, with before): it cancels the
// run's context, and once dead every later request fails as the process
// is gone.
type killAt struct {
	method, suffix string
	dead, before   bool
	cancel         context.CancelFunc
	mu             sync.Mutex
	fired          bool
}

func (k *killAt) RoundTrip(r *http.Request) (*http.Response, error) {
	k.mu.Lock()
	fired := k.fired
	k.mu.Unlock()
	if fired && k.dead {
		return nil, errors.New("the process is gone")
	}
	match := !fired && r.Method == k.method && strings.HasSuffix(r.URL.Path, k.suffix)
	if match && k.before {
		k.fire()
		// The request goes out with the run's context ended.
		return http.DefaultTransport.RoundTrip(r.WithContext(canceled()))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if match {
		k.fire()
	}
	return resp, err
}

func (k *killAt) fire() {
	k.mu.Lock()
	k.fired = true
	k.mu.Unlock()
	k.cancel()
}

// canceled is an ended context.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestReconcileNetwork_NextRunTagsWhatAKilledRunLeftUntagged(t *testing.T) {
	t.Parallel()
	want := faultFreeNetwork(t)
	for _, path := range []string{"/v2.0/security-groups", "/v2.0/networks", "/v2.0/subnets", "/v2.0/routers", "/v2.0/ports", "/v2.0/floatingips"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			kill := &killAt{method: http.MethodPost, suffix: path, dead: true, cancel: cancel}
			l := newNetLab(t, labos.Config{}, openstack.Options{HTTPClient: &http.Client{Transport: kill}}, defaultNet)
			if _, err := l.cloud.ReconcileNetwork(ctx, l.spec, &provider.Plan{}); err == nil {
				t.Fatal("the killed run succeeded")
			}
			kind := strings.TrimSuffix(strings.TrimPrefix(path, "/v2.0/"), "s")
			if left := untaggedMarked(l.lab.Inventory()); !slices.Equal(left, []string{kind}) {
				t.Fatalf("the killed run left untagged %v, want one %s", left, kind)
			}
			next := l.reconnect(t)
			plan := &provider.Plan{}
			if _, err := next.ReconcileNetwork(t.Context(), l.spec, plan); err != nil {
				t.Fatalf("next run: %v", err)
			}
			if !strings.Contains(strings.Join(changeNames(plan.Changes()), "\n"), "update openstack:"+strings.Replace(kind, "floatingip", "floating-ip", 1)) {
				t.Errorf("next run did not tag the leftover:\n%s", strings.Join(changeNames(plan.Changes()), "\n"))
			}
			if diff := inventory.Diff(want, l.lab.Snapshot()); len(diff) != 0 {
				t.Errorf("whole inventory differs from a fault-free run's:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}

// untaggedMarked lists the kinds of the lab's Neutron resources that carry
// cluster c's description marker and no tags.
func untaggedMarked(inv labos.Inventory) []string {
	var out []string
	add := func(kind, desc string, tags []string) {
		if strings.Contains(desc, "managed-by=taloscluster cluster=c") && len(tags) == 0 {
			out = append(out, kind)
		}
	}
	for _, x := range inv.SecurityGroups {
		add("security-group", x.Description, x.Tags)
	}
	for _, x := range inv.Networks {
		add("network", x.Description, x.Tags)
	}
	for _, x := range inv.Subnets {
		add("subnet", x.Description, x.Tags)
	}
	for _, x := range inv.Routers {
		add("router", x.Description, x.Tags)
	}
	for _, x := range inv.Ports {
		add("port", x.Description, x.Tags)
	}
	for _, x := range inv.FloatingIPs {
		add("floatingip", x.Description, x.Tags)
	}
	return out
}

// reconnect is a new talosc run's connection to the lab.
func (l *netLab) reconnect(t *testing.T) *openstack.Cloud {
	t.Helper()
	c, err := openstack.Connect(t.Context(), l.cfg, openstack.Options{Poll: 20 * time.Millisecond, Logf: l.logs.printf})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReconcileNetwork_CtrlCBetweenCreateAndTagDeletesTheResource(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	kill := &killAt{method: http.MethodPut, suffix: "/tags", before: true, cancel: cancel}
	l := newNetLab(t, labos.Config{}, openstack.Options{HTTPClient: &http.Client{Transport: kill}}, defaultNet)
	_, err := l.cloud.ReconcileNetwork(ctx, l.spec, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "tag security group c") {
		t.Fatalf("err = %v, want the failed tagging", err)
	}
	for _, g := range l.lab.Inventory().SecurityGroups {
		if g.Name == "c" {
			t.Errorf("the untagged security group %s was left behind: its cleanup did not survive the cancel", g.ID)
		}
	}
}

func TestReconcileNetwork_RefusesASameNamedResourceOfAnotherOwner(t *testing.T) {
	for _, desc := range []string{
		"", "managed-by=taloscluster cluster=other", "managed-by=taloscluster cluster=c (copied)",
		"managed-by=taloscluster cluster=c project=0123456789abcdef0123456789abcdef", // another project's marker
	} {
		t.Run(desc, func(t *testing.T) {
			l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
			l.createForeignNetwork(t, "c-net", desc)
			l.rec.Reset()
			_, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{})
			if err == nil || !strings.Contains(err.Error(), "refusing to adopt unowned network c-net (") {
				t.Fatalf("err = %v, want the refusal", err)
			}
			if m := l.rec.Mutations(); len(m) != 0 {
				t.Errorf("refusal made %d mutating calls: %v", len(m), m)
			}
		})
	}
}

func TestConnect_RepeatsAKeystoneTokenPOSTWhoseAnswerWasLost(t *testing.T) {
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: labos.Keystone, Method: http.MethodPost, PathPrefix: "/v3/auth/tokens", Nth: 1, Status: http.StatusGatewayTimeout, After: true}}})
	l := newNetLab(t, labos.Config{Injector: inj}, openstack.Options{}, defaultNet)
	if !strings.Contains(l.logs.String(), "/v3/auth/tokens: 504 Gateway Timeout; retrying (1 of 4)") {
		t.Errorf("the token POST was not repeated:\n%s", l.logs)
	}
}

func TestValidateMachines_RefusesASubnetCIDRChangeBeforeAnyMutation(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	c := defaultNet
	c.cidr = "127.17.0.0/24"
	l.configure(t, c)
	l.rec.Reset()
	cfg := l.cfg
	err := l.cloud.ValidateMachines(t.Context(), cfg.Hostnames(), &provider.Inventory{})
	if err == nil || !strings.Contains(err.Error(), "network.cluster.cidr is 127.17.0.0/24 but subnet c-subnet (") ||
		!strings.Contains(err.Error(), "has 127.16.0.0/24, and Neutron cannot change a subnet's cidr") {
		t.Fatalf("err = %v, want the cidr refusal", err)
	}
	if m := l.rec.Mutations(); len(m) != 0 {
		t.Errorf("validation made %d mutating calls: %v", len(m), m)
	}
	l.configure(t, defaultNet)
	if err := l.cloud.ValidateMachines(t.Context(), cfg.Hostnames(), &provider.Inventory{}); err != nil {
		t.Errorf("unchanged cidr refused: %v", err)
	}
}

// retried runs f, and once more if it failed (a user's rerun).
func retried(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Logf("%s failed the first time: %v", what, err)
		if err := f(); err != nil {
			t.Fatalf("%s failed again on the rerun: %v", what, err)
		}
	}
}

func TestNetwork_RandomLostAnswersConvergeAndDestroyExactly(t *testing.T) {
	t.Parallel()
	clean := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	clean.reconcile(t, false)
	built := clean.lab.Snapshot()
	if err := clean.cloud.DestroyNetwork(t.Context(), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	destroyed := clean.lab.Snapshot()
	// Tag and delete paths carry ids, so which of their answers get lost
	// varies from run to run: a seed may lose none, the seeds together
	// always lose some.
	var lost atomic.Int32
	t.Cleanup(func() {
		t.Logf("%d answers lost over 6 seeds", lost.Load())
		if lost.Load() == 0 {
			t.Error("no answer was lost: the faults matched nothing")
		}
	})
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed+1), func(t *testing.T) {
			t.Parallel()
			inj := labnet.NewInjector(labnet.Knobs{})
			l := newNetLab(t, labos.Config{Injector: inj}, openstack.Options{RequestTimeout: time.Second}, defaultNet)
			lossy := labnet.Knobs{LostRate: 0.1, Seed: seed + 1}
			inj.Set(lossy)
			retried(t, "reconcile", func() error { _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); return err })
			inj.Set(labnet.Knobs{})
			if diff := inventory.Diff(built, l.lab.Snapshot()); len(diff) != 0 {
				t.Errorf("built inventory differs from a fault-free build's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
			}
			inj.Set(lossy)
			retried(t, "destroy", func() error { return l.cloud.DestroyNetwork(t.Context(), &provider.Plan{}) })
			inj.Set(labnet.Knobs{})
			if diff := inventory.Diff(destroyed, l.lab.Snapshot()); len(diff) != 0 {
				t.Errorf("inventory after destroy differs from a fault-free destroy's:\n%s", strings.Join(diff, "\n"))
			}
			for _, c := range l.rec.Calls() {
				if c.Lost {
					lost.Add(1)
				}
			}
		})
	}
}
