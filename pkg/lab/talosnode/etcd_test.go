package talosnode_test

import (
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// members lists hostname → id through the API.
func members(t *testing.T, c *client.Client) (map[string]uint64, error) {
	t.Helper()
	resp, err := c.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{})
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, m := range resp.GetMessages()[0].GetMembers() {
		out[m.GetHostname()] = m.GetId()
	}
	return out, nil
}

func TestEtcdRemoveAndLeaveKeepQuorum(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	c1 := l.client(cp(1))
	ids, err := members(t, c1)
	if err != nil || len(ids) != 3 {
		t.Fatalf("members %v %v", ids, err)
	}
	if _, err := l.client(cp(2)).EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{QueryLocal: true}); err != nil {
		t.Fatalf("local member list: %v", err)
	}

	l.nodes[cp(3)].PowerOff()
	// cp-02 is up and cp-03 down: removing cp-02 would leave one of two.
	err = c1.EtcdRemoveMemberByID(ctx(t, 2*time.Second), &machine.EtcdRemoveMemberByIDRequest{MemberId: ids[cp(2)]})
	if !contains(err, "etcdserver: unhealthy cluster") {
		t.Fatalf("removing an active member without spare quorum: %v", err)
	}
	// the down member can go
	if err := c1.EtcdRemoveMemberByID(ctx(t, 2*time.Second), &machine.EtcdRemoveMemberByIDRequest{MemberId: ids[cp(3)]}); err != nil {
		t.Fatalf("removing the down member: %v", err)
	}
	err = c1.EtcdRemoveMemberByID(ctx(t, 2*time.Second), &machine.EtcdRemoveMemberByIDRequest{MemberId: ids[cp(3)]})
	if status.Code(err) != codes.NotFound || !contains(err, "etcdserver: member not found") {
		t.Fatalf("removing it again: %v, want NotFound", err)
	}
	if err := l.client(cp(2)).EtcdLeaveCluster(ctx(t, 2*time.Second), &machine.EtcdLeaveClusterRequest{}); err != nil {
		t.Fatalf("cp-02 leaves: %v", err)
	}
	left, err := members(t, c1)
	if err != nil || len(left) != 1 || left[cp(1)] == 0 {
		t.Fatalf("members after leave: %v %v", left, err)
	}
	if _, err := c1.EtcdForfeitLeadership(ctx(t, 2*time.Second), &machine.EtcdForfeitLeadershipRequest{}); !contains(err, "cannot forfeit leadership, only one member") {
		t.Fatalf("forfeit with one member: %v", err)
	}
	if _, err := l.client(worker).EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("member list on a worker: %v, want Unimplemented", err)
	}
}

func TestEtcdQuorumLossAndLeadership(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	c1 := l.client(cp(1))

	resp, err := c1.EtcdForfeitLeadership(ctx(t, 2*time.Second), &machine.EtcdForfeitLeadershipRequest{})
	if next := resp.GetMessages()[0].GetMember(); err != nil || (next != cp(2) && next != cp(3)) {
		t.Fatalf("forfeit on the leader: %v %v, want leadership moved to another control plane", resp, err)
	}
	resp, err = c1.EtcdForfeitLeadership(ctx(t, 2*time.Second), &machine.EtcdForfeitLeadershipRequest{})
	if err != nil || resp.GetMessages()[0].GetMember() != "" {
		t.Fatalf("forfeit on a follower: %v %v, want no change", resp, err)
	}

	l.nodes[cp(2)].PowerOff()
	l.nodes[cp(3)].PowerOff()
	if l.nodes[cp(1)].Cluster().Quorum() {
		t.Fatal("quorum with 1 of 3 members up")
	}
	_, err = c1.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{})
	if status.Code(err) != codes.Unavailable || !contains(err, "etcdserver: no leader") {
		t.Fatalf("member list without quorum: %v", err)
	}
	l.nodes[cp(2)].PowerOn()
	eventually(t, "quorum back", func() bool { return l.nodes[cp(1)].Cluster().Quorum() })
	if ids, err := members(t, c1); err != nil || len(ids) != 3 {
		t.Fatalf("members after recovery: %v %v", ids, err)
	}
}
