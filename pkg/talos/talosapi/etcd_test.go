package talosapi_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// waitMembers waits until node lists n members (started or not).
func waitMembers(t *testing.T, cl *talosapi.Client, node string, n int) []talosapi.Member {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		members, err := cl.EtcdMembers(t.Context(), node)
		if err == nil && len(members) == n {
			return members
		}
		if time.Now().After(deadline) {
			t.Fatalf("EtcdMembers = %+v, %v; want %d members", members, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// etcdPair is a bootstrapped cluster of two control planes, the second
// one's member never started.
func etcdPair(t *testing.T) (*cluster, *talosapi.Client) {
	t.Helper()
	c := newCluster(t, 2, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(cp2, talosnode.Knobs{EtcdNeverStarts: true})
	cl := c.dial(cp1, talosapi.Options{})
	if err := cl.Bootstrap(t.Context(), c.addr(cp1), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return c, cl
}

// TestEtcdMemberNeverStarted: a member added but never started is listed
// with an empty hostname (I-S10), and with its peer URL.
func TestEtcdMemberNeverStarted(t *testing.T) {
	t.Parallel()
	c, cl := etcdPair(t)
	named := 0
	for _, m := range waitMembers(t, cl, c.addr(cp1), 2) {
		if m.Hostname != "" {
			named++
		}
		if len(m.PeerURLs) != 1 || !strings.HasPrefix(m.PeerURLs[0], "https://") {
			t.Errorf("member %+v: want its peer URL", m)
		}
	}
	if named != 1 {
		t.Fatal("want one unnamed (unstarted) member")
	}
}

// TestEtcdRemoveMember removes the unstarted member by id; removing it
// again (NotFound) is success too.
func TestEtcdRemoveMember(t *testing.T) {
	t.Parallel()
	c, cl := etcdPair(t)
	node := c.addr(cp1)
	var unstarted uint64
	for _, m := range waitMembers(t, cl, node, 2) {
		if m.Hostname == "" {
			unstarted = m.ID
		}
	}
	for range 2 {
		if err := cl.EtcdRemoveMember(t.Context(), node, unstarted); err != nil {
			t.Fatal(err)
		}
	}
	if m := waitMembers(t, cl, node, 1); m[0].Hostname != cp1 {
		t.Errorf("members after the removal: %+v", m)
	}
	if n := c.calls("/machine.MachineService/EtcdRemoveMemberByID?", codes.NotFound); n != 1 {
		t.Errorf("%d removals answered NotFound, want the second one", n)
	}
}

// TestEtcdForfeitLeadership: forfeiting works with a peer, is a no-op for
// a single member, and is refused on a worker.
func TestEtcdForfeitLeadership(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	if err := cl.Bootstrap(t.Context(), node, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, cl, node, 1)
	if err := cl.EtcdForfeitLeadership(t.Context(), node); err != nil {
		t.Errorf("forfeit with one member: %v", err)
	}
	if n := c.calls("/machine.MachineService/EtcdForfeitLeadership?", codes.Unknown); n != 1 {
		t.Errorf("%d forfeits refused, want Talos's \"only one member\"", n)
	}
	c.booted(cp2, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	waitMembers(t, cl, node, 2)
	c.waitStatus(cp2, "a started member", func(st talosnode.NodeStatus) bool { return st.EtcdMember != 0 })
	if err := cl.EtcdForfeitLeadership(t.Context(), node); err != nil {
		t.Errorf("forfeit with two members: %v", err)
	}
	if err := cl.EtcdForfeitLeadership(t.Context(), c.addr(worker1)); status.Code(err) != codes.Unimplemented {
		t.Errorf("forfeit on a worker = %v, want its refusal", err)
	}
}
