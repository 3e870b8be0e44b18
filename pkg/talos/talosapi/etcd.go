package talosapi

import (
	"context"
	"errors"
	"strings"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Member is one etcd member.
type Member struct {
	// ID is etcd's member id.
	ID uint64
	// Hostname is the member's name; empty for a member added but never
	// started (I-S10: callers must fail closed on it).
	Hostname string
	// PeerURLs are the member's peer URLs (the node's address for a
	// member whose name is still empty).
	PeerURLs []string
	// Learner reports a member that is not voting yet.
	Learner bool
}

// EtcdMembers lists the etcd members as node's own member sees them
// (QueryLocal, what `talosctl etcd members` asks, day2.md §4.1): the
// authoritative list on a surviving control plane. It needs a leader.
// Without QueryLocal Talos would ask any control plane, maybe the one
// being removed.
func (c *Client) EtcdMembers(ctx context.Context, node string) ([]Member, error) {
	var out []Member
	err := c.read(ctx, "EtcdMemberList", node, func(ctx context.Context) error {
		resp, err := c.c.EtcdMemberList(ctx, &machineapi.EtcdMemberListRequest{QueryLocal: true})
		if err != nil {
			return err
		}
		out, err = membersOf(resp)
		return err
	})
	return out, err
}

// membersOf is the member list of one node's answer. An answer with no
// message is no list at all (an error), never an empty one.
func membersOf(resp *machineapi.EtcdMemberListResponse) ([]Member, error) {
	msgs := resp.GetMessages()
	if len(msgs) == 0 {
		return nil, errors.New("empty answer")
	}
	out := []Member{}
	for _, m := range msgs[0].GetMembers() {
		out = append(out, Member{ID: m.GetId(), Hostname: m.GetHostname(), PeerURLs: m.GetPeerUrls(), Learner: m.GetIsLearner()})
	}
	return out, nil
}

// EtcdForfeitLeadership hands etcd leadership from node's member to
// another voting member, before the node is reset or rebooted (Omni's
// graceful leave starts with it). A cluster of one member has no one to
// hand it to: Talos's "cannot forfeit leadership, only one member" is
// success here, as there is no leadership to move and nothing for the
// caller to fail on. Forfeiting twice is harmless, so an Unavailable
// answer is retried.
func (c *Client) EtcdForfeitLeadership(ctx context.Context, node string) error {
	return c.read(ctx, "EtcdForfeitLeadership", node, func(ctx context.Context) error {
		_, err := c.c.EtcdForfeitLeadership(ctx, &machineapi.EtcdForfeitLeadershipRequest{})
		if err != nil && strings.Contains(nodeStatus(err).Message(), "only one member") {
			return nil
		}
		return err
	})
}

// EtcdRemoveMember removes the etcd member id through node, a surviving
// control plane (the removal of a member whose node is gone). A member
// that is not there (NotFound) is already removed: success, so the call
// is safe to repeat and an Unavailable answer is retried. etcd's refusals
// ("etcdserver: unhealthy cluster", …) are errors.
func (c *Client) EtcdRemoveMember(ctx context.Context, node string, id uint64) error {
	return c.read(ctx, "EtcdRemoveMemberByID", node, func(ctx context.Context) error {
		err := c.c.EtcdRemoveMemberByID(ctx, &machineapi.EtcdRemoveMemberByIDRequest{MemberId: id})
		if status.Code(err) == codes.NotFound {
			return nil
		}
		return err
	})
}
