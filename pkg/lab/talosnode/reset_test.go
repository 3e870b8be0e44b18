package talosnode_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// memberNames lists the discovery members a node's COSI state shows.
func memberNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	list, err := safe.StateListAll[*cluster.Member](ctx(t, 2*time.Second), c.COSI)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for m := range list.All() {
		out = append(out, m.TypedSpec().Hostname)
	}
	slices.Sort(out)
	return out
}

func TestResetGracefulLeavesEtcdAndHalts(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	var (
		mu     sync.Mutex
		events []talosnode.Event
	)
	l := newLab(t, fx, talosnode.Options{OnEvent: func(e talosnode.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	l.bootstrapped()
	c1 := l.client(cp(1))
	if got := memberNames(t, c1); len(got) != 4 {
		t.Fatalf("discovery members %v", got)
	}
	if err := l.client(cp(3)).ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true, Reboot: false}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cp-03 halted", func() bool { st := l.nodes[cp(3)].Status(); return !st.Powered && !st.APIUp })
	ids, err := members(t, c1)
	if err != nil || len(ids) != 2 || ids[cp(3)] != 0 {
		t.Fatalf("etcd members after a graceful reset: %v %v", ids, err)
	}
	eventually(t, "cp-03 gone from discovery", func() bool { return !slices.Contains(memberNames(t, c1), cp(3)) })
	mu.Lock()
	reset := slices.ContainsFunc(events, func(e talosnode.Event) bool { return e.Kind == talosnode.EventReset && e.Node.Hostname == cp(3) })
	mu.Unlock()
	if !reset {
		t.Error("no reset event")
	}

	// cp-02 down: etcd (now cp-01 and cp-02) has no leader, so the
	// graceful reset of cp-01 cannot leave etcd: the reset sequence fails
	// and the node keeps running.
	l.nodes[cp(2)].PowerOff()
	if err := c1.ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reset failure", func() bool { return l.nodes[cp(1)].Status().ResetError != "" })
	st := l.nodes[cp(1)].Status()
	if !st.APIUp || st.Stage != "running" || !contains(errString(st.ResetError), "etcdserver: no leader") {
		t.Fatalf("after a failed graceful reset: %+v", st)
	}
}

func TestResetToMaintenanceAndReinstall(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	// a wiped node with user data would configure itself again: detach it,
	// as the Proxmox provider detaches the cidata ISO
	if err := l.nodes[worker].SetUserData(nil); err != nil {
		t.Fatal(err)
	}
	if err := l.client(worker).Reset(ctx(t, 2*time.Second), true, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "maintenance mode", func() bool { st := l.nodes[worker].Status(); return st.Maintenance })
	addr := fx.addrs[worker].String()
	mc, err := client.New(t.Context(), client.WithMaintenanceMode(addr, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	v, err := mc.Version(ctx(t, 2*time.Second))
	if err != nil || v.GetMessages()[0].GetVersion().GetTag() != talos114 {
		t.Fatalf("maintenance Version: %v %v", v, err)
	}
	if _, err := mc.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{}); !contains(err, "machine type is not set") {
		t.Fatalf("etcd in maintenance: %v", err)
	}
	// the insecure maintenance API accepts a configuration, installs and reboots
	if _, err := mc.ApplyConfiguration(ctx(t, 2*time.Second), &machine.ApplyConfigurationRequest{Data: fx.configs[worker], Mode: machine.ApplyConfigurationRequest_AUTO}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reinstalled", func() bool { st := l.nodes[worker].Status(); return st.APIUp && !st.Maintenance })
	c1 := l.client(cp(1))
	eventually(t, "reinstalled worker in discovery", func() bool { return slices.Contains(memberNames(t, c1), worker) })
	if _, err := l.client(worker).Version(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// errString makes an error of a status string.
func errString(s string) error {
	if s == "" {
		return nil
	}
	return stringError(s)
}

type stringError string

func (e stringError) Error() string { return string(e) }

func TestWipedNodeTakesUserDataAgain(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	c3 := l.client(cp(3))
	boots := l.nodes[cp(3)].Status().Boots
	if err := c3.ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true, Reboot: true}); err != nil {
		t.Fatal(err)
	}
	l.waitReboot(cp(3), boots)
	if st := l.nodes[cp(3)].Status(); st.Maintenance {
		t.Fatalf("a wiped node with user data stayed in maintenance: %+v", st)
	}
	// it joins etcd again as a new member
	eventually(t, "3 started members", func() bool { return l.startedMembers() == 3 })
	ids, err := members(t, l.client(cp(1)))
	if err != nil || len(ids) != 3 {
		t.Fatalf("members %v %v", ids, err)
	}
}
