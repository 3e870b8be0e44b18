package talosnode_test

import (
	"slices"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// bootWith boots one host with knobs and waits for apid unless it never
// boots.
func (l *lab) bootWith(host string, k talosnode.Knobs) {
	l.t.Helper()
	n, err := l.fleet.Boot(l.fx.addrs[host], l.fx.configs[host], k)
	if err != nil {
		l.t.Fatal(err)
	}
	l.nodes[host] = n
	if !k.NeverBoots {
		if err := n.WaitAPI(5 * time.Second); err != nil {
			l.t.Fatal(err)
		}
	}
}

func TestInjectedAPIFaults(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	inj := labnet.NewInjector(labnet.Knobs{})
	l := newLab(t, fx, talosnode.Options{Injector: inj})
	l.boot(cp(1), cp(2))
	c := l.client(cp(1))
	cp1 := fx.addrs[cp(1)].String()

	// 5xx rate: every call fails with Unavailable, and is recorded.
	inj.Set(labnet.Knobs{ErrorRate: 1})
	if _, err := c.Version(ctx(t, 2*time.Second)); status.Code(err) != codes.Unavailable || !contains(err, "injected fault") {
		t.Fatalf("error rate 1: %v", err)
	}
	calls := l.rec.Calls()
	last := calls[len(calls)-1]
	if last.Service != "talos" || last.Method != "grpc-read" || last.Path != "/machine.MachineService/Version?node="+cp1 || last.Status != int(codes.Unavailable) {
		t.Fatalf("recorded %+v", last)
	}

	// latency
	inj.Set(labnet.Knobs{Latency: 60 * time.Millisecond})
	start := time.Now()
	if _, err := c.Version(ctx(t, 2*time.Second)); err != nil || time.Since(start) < 60*time.Millisecond {
		t.Fatalf("latency: %v after %v", err, time.Since(start))
	}

	// a hang on one node's method until the client gives up
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: "talos", PathPrefix: "/machine.MachineService/Version?node=" + cp1, Hang: true}}})
	if _, err := c.Version(ctx(t, 150*time.Millisecond)); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("hang: %v", err)
	}
	if _, err := l.client(cp(2)).Version(ctx(t, 2*time.Second)); err != nil {
		t.Fatalf("the other node is not hung: %v", err)
	}

	// fail the 2nd bootstrap only
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: "talos", Method: "grpc", PathPrefix: "/machine.MachineService/Bootstrap", Nth: 2, Status: 503}}})
	var errs []codes.Code
	for range 3 {
		err := c.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{})
		errs = append(errs, status.Code(err))
	}
	if errs[1] != codes.Unavailable || errs[0] == codes.Unavailable || errs[2] == codes.Unavailable {
		t.Fatalf("scripted fault on the 2nd bootstrap: %v", errs)
	}

	// seeded error rates replay
	pattern := func() []bool {
		inj.Set(labnet.Knobs{ErrorRate: 0.5, Seed: 42})
		var out []bool
		for range 16 {
			_, err := c.Version(ctx(t, 2*time.Second))
			out = append(out, err == nil)
		}
		return out
	}
	first, second := pattern(), pattern()
	if !slices.Equal(first, second) || !slices.Contains(first, true) || !slices.Contains(first, false) {
		t.Fatalf("seeded runs differ or do not mix: %v %v", first, second)
	}

	counts := l.rec.Counts(func(c labnet.Call) string { return c.Method })
	if counts["grpc"] != 3 || counts["grpc-read"] < 30 {
		t.Fatalf("counts %v", counts)
	}
	for _, m := range l.rec.Mutations() {
		if m.Path != "/machine.MachineService/Bootstrap?node="+cp1 {
			t.Fatalf("mutation %+v", m)
		}
	}
}

func TestNodeKnobs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootWith(worker, talosnode.Knobs{NeverBoots: true})
	l.bootWith(cp(1), talosnode.Knobs{RebootDown: 300 * time.Millisecond})
	l.bootWith(cp(2), talosnode.Knobs{})
	c1 := l.client(cp(1))
	eventually(t, "bootstrap", func() bool { return c1.Bootstrap(t.Context(), &machine.BootstrapRequest{}) == nil })
	eventually(t, "2 members", func() bool { return l.startedMembers() == 2 })
	l.bootWith(cp(3), talosnode.Knobs{EtcdNeverStarts: true, NeverLeavesEtcd: true})

	// never boots
	{
		time.Sleep(100 * time.Millisecond)
		if st := l.nodes[worker].Status(); !st.Powered || st.APIUp || st.Stage != "booting" {
			t.Fatalf("a node that never boots: %+v", st)
		}
		wc, err := client.New(t.Context(), client.WithConfig(l.talosconfig(worker)))
		if err != nil {
			t.Fatal(err)
		}
		defer wc.Close()
		if _, err := wc.Version(ctx(t, 300*time.Millisecond)); status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("Version of a node that never boots: %v", err)
		}
	}

	// etcd never starts
	{
		eventually(t, "cp-03 added", func() bool { return len(l.nodes[cp(1)].Cluster().EtcdMembers()) == 3 })
		time.Sleep(50 * time.Millisecond) // longer than EtcdJoin: it would have started
		resp, err := c1.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ms := resp.GetMessages()[0].GetMembers()
		if len(ms) != 3 || ms[2].GetHostname() != "" || !ms[2].GetIsLearner() || len(ms[2].GetClientUrls()) != 0 {
			t.Fatalf("an unstarted member must be listed without a name: %v", ms)
		}
	}

	// never leaves etcd
	{
		if err := l.client(cp(3)).ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "cp-03 halted", func() bool { return !l.nodes[cp(3)].Status().Powered })
		ids, err := members(t, c1)
		if err != nil || len(ids) != 3 {
			t.Fatalf("a member that never leaves is still listed: %v %v", ids, err)
		}
	}

	// apid down after reboot
	{
		if err := c1.Reboot(ctx(t, 2*time.Second)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "down", func() bool { return !l.nodes[cp(1)].Status().APIUp })
		down := time.Now()
		eventually(t, "up", func() bool { return l.nodes[cp(1)].Status().APIUp })
		if d := time.Since(down); d < 250*time.Millisecond {
			t.Fatalf("apid down for %v, want ~300ms", d)
		}
	}

	// reset fails
	{
		l.nodes[cp(2)].SetKnobs(talosnode.Knobs{ResetFails: "failed to wipe STATE: device busy"})
		if err := l.client(cp(2)).ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: false}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "reset failure", func() bool { return l.nodes[cp(2)].Status().ResetError != "" })
		if st := l.nodes[cp(2)].Status(); !st.APIUp || st.Stage != "running" || st.ResetError != "failed to wipe STATE: device busy" {
			t.Fatalf("after a failing reset: %+v", st)
		}
	}
}
