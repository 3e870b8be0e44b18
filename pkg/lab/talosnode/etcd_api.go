package talosnode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// EtcdMemberList lists the etcd members (from any member, or the local
// one with QueryLocal); without a leader it fails as etcd does.
func (s *machineServer) EtcdMemberList(_ context.Context, in *machine.EtcdMemberListRequest) (*machine.EtcdMemberListResponse, error) {
	n := s.node
	if _, err := n.requireControlPlane("member list"); err != nil {
		return nil, err
	}
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &n.cluster.etcd
	if in.GetQueryLocal() && (n.etcdMember == nil || !n.etcdMember.up()) {
		return nil, status.Errorf(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp %s: connect: connection refused\"",
			netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), constants.EtcdClientPort))
	}
	if err := e.requireLeader(); err != nil {
		return nil, err
	}
	msg := &machine.EtcdMembers{}
	for _, m := range e.members {
		msg.LegacyMembers = append(msg.LegacyMembers, m.name)
		msg.Members = append(msg.Members, &machine.EtcdMember{
			Id: m.id, Hostname: m.name, PeerUrls: []string{m.peerURL()},
			ClientUrls: clientURLs(m), IsLearner: m.learner,
		})
	}
	return &machine.EtcdMemberListResponse{Messages: []*machine.EtcdMembers{msg}}, nil
}

// clientURLs are empty until the member started, as etcd lists them.
func clientURLs(m *etcdMember) []string {
	if !m.started {
		return nil
	}
	return []string{m.clientURL()}
}

// EtcdRemoveMemberByID removes a member through etcd's MemberRemove.
func (s *machineServer) EtcdRemoveMemberByID(_ context.Context, in *machine.EtcdRemoveMemberByIDRequest) (*machine.EtcdRemoveMemberByIDResponse, error) {
	n := s.node
	if _, err := n.requireControlPlane("etcd remove member"); err != nil {
		return nil, err
	}
	f := n.fleet
	f.mu.Lock()
	c := n.cluster
	err := c.etcd.remove(in.GetMemberId())
	f.mu.Unlock()
	switch {
	case errors.Is(err, errMemberNotFound):
		return nil, status.Error(codes.NotFound, removeError(in.GetMemberId(), err).Error())
	case status.Code(err) == codes.Unavailable:
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("failed to remove member: %w", removeError(in.GetMemberId(), err))
	}
	c.nodesChanged()
	return &machine.EtcdRemoveMemberByIDResponse{Messages: []*machine.EtcdRemoveMemberByID{{}}}, nil
}

// EtcdLeaveCluster removes this node's member and wipes its etcd data.
func (s *machineServer) EtcdLeaveCluster(context.Context, *machine.EtcdLeaveClusterRequest) (*machine.EtcdLeaveClusterResponse, error) {
	n := s.node
	if _, err := n.requireControlPlane("etcd leave"); err != nil {
		return nil, err
	}
	if err := n.leaveEtcd(); err != nil {
		return nil, fmt.Errorf("failed to leave cluster: %w", err)
	}
	return &machine.EtcdLeaveClusterResponse{Messages: []*machine.EtcdLeaveCluster{{}}}, nil
}

// leaveEtcd is etcd.LeaveCluster: remove the local member (an already
// removed one is fine), stop etcd, empty the data directory.
func (n *Node) leaveEtcd() error {
	f := n.fleet
	f.mu.Lock()
	c := n.cluster
	if err := c.etcd.requireLeader(); err != nil {
		f.mu.Unlock()
		return err
	}
	if n.etcdMember == nil {
		f.mu.Unlock()
		return errors.New("etcd member ID not found")
	}
	if !n.knobs.NeverLeavesEtcd {
		id := n.etcdMember.id
		if err := c.etcd.remove(id); err != nil && !errors.Is(err, errMemberNotFound) {
			f.mu.Unlock()
			return removeError(id, err)
		}
		n.etcdData = false
	}
	f.mu.Unlock()
	c.nodesChanged()
	return nil
}

// EtcdForfeitLeadership moves leadership away from this member; Member is
// the new leader, empty when this member was not the leader.
func (s *machineServer) EtcdForfeitLeadership(context.Context, *machine.EtcdForfeitLeadershipRequest) (*machine.EtcdForfeitLeadershipResponse, error) {
	n := s.node
	if _, err := n.requireControlPlane("etcd forfeit leadership"); err != nil {
		return nil, err
	}
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &n.cluster.etcd
	if err := e.requireLeader(); err != nil {
		return nil, err
	}
	if n.etcdMember == nil || e.member(n.etcdMember.id) == nil {
		return nil, errors.New("etcd member ID not found")
	}
	if len(e.members) == 1 {
		return nil, fmt.Errorf("failed to forfeit leadership: %w", errors.New("cannot forfeit leadership, only one member"))
	}
	next := ""
	if e.leader == n.etcdMember.id {
		for _, m := range e.voting() {
			if m != n.etcdMember && m.up() {
				e.leader, next = m.id, m.name
				break
			}
		}
	}
	return &machine.EtcdForfeitLeadershipResponse{Messages: []*machine.EtcdForfeitLeadership{{Member: next}}}, nil
}
