package talosnode

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcd's own error texts (go.etcd.io/etcd/api/v3/v3rpc/rpctypes), as the
// Talos API passes them on.
const (
	etcdErrNoLeader        = "etcdserver: no leader"
	etcdErrMemberNotFound  = "etcdserver: member not found"
	etcdErrUnhealthy       = "etcdserver: unhealthy cluster"
	etcdErrNotEnoughStarts = "etcdserver: re-configuration failed due to not enough started members"
)

// etcdMember is one member of the simulated etcd.
type etcdMember struct {
	id      uint64
	node    *Node
	name    string // "" until started, as etcd lists unstarted members
	addr    netip.Addr
	learner bool
	started bool
}

// up reports whether the member's etcd runs: started, on a running node
// that still holds its data.
func (m *etcdMember) up() bool {
	return m.started && m.node != nil && m.node.etcdRunning() && m.node.etcdMember == m
}

// peerURL and clientURL are the member's URLs as Talos advertises them.
func (m *etcdMember) peerURL() string {
	return "https://" + netip.AddrPortFrom(m.addr, constants.EtcdPeerPort).String()
}

func (m *etcdMember) clientURL() string {
	return "https://" + netip.AddrPortFrom(m.addr, constants.EtcdClientPort).String()
}

// etcdCluster is a cluster's etcd: the member list, the leader and whether
// it was ever bootstrapped. Guarded by the fleet's mutex.
type etcdCluster struct {
	seed         string
	serial       int
	bootstrapped bool
	members      []*etcdMember
	leader       uint64
}

// newID is a deterministic member id (replayable runs).
func (e *etcdCluster) newID(hostname string) uint64 {
	e.serial++
	h := fnv.New64a()
	_, _ = h.Write([]byte(e.seed + "/" + hostname + "/" + strconv.Itoa(e.serial)))
	return h.Sum64() | 1
}

// voting returns the voting members.
func (e *etcdCluster) voting() []*etcdMember {
	var out []*etcdMember
	for _, m := range e.members {
		if !m.learner {
			out = append(out, m)
		}
	}
	return out
}

// quorum reports whether a majority of voting members is up.
func (e *etcdCluster) quorum() bool {
	v := e.voting()
	if len(v) == 0 {
		return false
	}
	up := 0
	for _, m := range v {
		if m.up() {
			up++
		}
	}
	return up >= len(v)/2+1
}

// elect keeps a leader while there is quorum.
func (e *etcdCluster) elect() {
	if !e.quorum() {
		e.leader = 0
		return
	}
	if l := e.member(e.leader); l != nil && l.up() && !l.learner {
		return
	}
	for _, m := range e.voting() {
		if m.up() {
			e.leader = m.id
			return
		}
	}
}

// member returns the member with id.
func (e *etcdCluster) member(id uint64) *etcdMember {
	for _, m := range e.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// bootstrap creates the cluster with n as its single, started member.
func (e *etcdCluster) bootstrap(n *Node) {
	e.bootstrapped = true
	m := &etcdMember{id: e.newID(n.hostname()), node: n, name: n.hostname(), addr: n.addr, started: true}
	e.members = append(e.members, m)
	n.etcdMember = m
	e.leader = m.id
}

// add adds n as an unstarted learner (what a joining control plane does
// first).
func (e *etcdCluster) add(n *Node) *etcdMember {
	m := &etcdMember{id: e.newID(n.hostname()), node: n, addr: n.addr, learner: true}
	e.members = append(e.members, m)
	n.etcdMember = m
	return m
}

// start starts a joined member and promotes it to a voter.
func (e *etcdCluster) start(m *etcdMember) {
	m.started, m.learner, m.name = true, false, m.node.hostname()
	e.elect()
}

// remove removes member id as etcd's MemberRemove does, refusing what
// etcd refuses with strict reconfiguration checks.
func (e *etcdCluster) remove(id uint64) error {
	e.elect()
	if e.leader == 0 {
		return status.Error(codes.Unavailable, etcdErrNoLeader)
	}
	m := e.member(id)
	if m == nil {
		return errMemberNotFound
	}
	if !m.learner {
		if err := e.mayRemove(m); err != nil {
			return err
		}
	}
	for i, x := range e.members {
		if x == m {
			e.members = append(e.members[:i], e.members[i+1:]...)
			break
		}
	}
	e.elect()
	return nil
}

// errMemberNotFound is etcd's ErrMemberNotFound.
var errMemberNotFound = errors.New(etcdErrMemberNotFound)

// mayRemove is etcd's mayRemoveMember: enough started voters must remain,
// and removing an active member must keep the active ones a quorum.
func (e *etcdCluster) mayRemove(m *etcdMember) error {
	voting := e.voting()
	members, started := 0, 0
	for _, v := range voting {
		if v == m {
			continue
		}
		members++
		if v.started {
			started++
		}
	}
	if started < members/2+1 {
		return errors.New(etcdErrNotEnoughStarts)
	}
	if !m.up() {
		return nil
	}
	active := 0
	for _, v := range voting {
		if v.up() {
			active++
		}
	}
	if active-1 < 1+(len(voting)-1)/2 {
		return errors.New(etcdErrUnhealthy)
	}
	return nil
}

// requireLeader is clientv3.WithRequireLeader: a request without a leader
// fails.
func (e *etcdCluster) requireLeader() error {
	e.elect()
	if !e.bootstrapped {
		return errors.New("no controlplane endpoints discovered yet")
	}
	if e.leader == 0 {
		return status.Error(codes.Unavailable, etcdErrNoLeader)
	}
	return nil
}

// removeError wraps a remove failure as Talos does.
func removeError(id uint64, err error) error {
	return fmt.Errorf("failed to remove member %d: %w", id, err)
}
