package nodes

import (
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// neverRebootsOnApply reports a Talos that applies every configuration
// change live: from 1.14 ApplyConfiguration's AUTO is NO_REBOOT
// (day2.md §3). An unreadable version is not assumed to be one: the node
// is asked (a dry run) instead.
func neverRebootsOnApply(talos string) bool {
	v, err := config.ParseVersion(talos)
	if err != nil {
		return false
	}
	first, _ := config.ParseVersion("v1.14.0")
	return v.Compare(first) >= 0
}

// applyDetail is a planned apply's line: whether it restarts the node on
// the Talos it runs, and, for one that does, the node's own reason.
func applyDetail(talos string, restart bool, details string) string {
	if !restart {
		return fmt.Sprintf("the running configuration differs from cluster.yaml's; applies live on Talos %s", talos)
	}
	// A dry run's details open with "Dry run summary:" and then Talos's
	// mode line, which names no reason unless the node gave one.
	details = strings.TrimPrefix(strings.TrimSpace(details), "Dry run summary:")
	reason, _, _ := strings.Cut(strings.TrimSpace(details), "\n")
	if reason == "" || strings.HasSuffix(reason, "(skipped in dry-run).") {
		reason = "the change cannot be applied in immediate mode"
	}
	return fmt.Sprintf("the running configuration differs from cluster.yaml's; REBOOTS the node on Talos %s (%s)", talos, reason)
}

// kubeState is a Kubernetes node's state as a removal sees it.
type kubeState int

const (
	kubeAbsent kubeState = iota
	kubeReady
	kubeNotReady
	// kubeUnknown: the node list failed, so nothing is known.
	kubeUnknown
)

func (s kubeState) String() string {
	return [...]string{"absent", "Ready", "NotReady", "unknown"}[s]
}

// removalFacts is what the run knows of one node it removes.
type removalFacts struct {
	host         string
	controlPlane bool
	// machine: the owned inventory holds it.
	machine bool
	// address is its real address, "" when none is known.
	address string
	kube    kubeState
}

// removal is how one node leaves the cluster (I-S3..I-S9), decided
// before anything runs.
type removal struct {
	removalFacts
	drain, reset, deleteNode, deleteMachine bool
	// etcdEvidence: a control plane that cannot be reset is deleted only
	// when the etcd member list on a surviving control plane proves it is
	// no member (I-S9).
	etcdEvidence bool
}

// planRemoval decides one node's removal:
//   - with an address: drain (if it has a Node), reset, delete the Node,
//     delete the machine (I-S3); inventory-only nodes are reset and
//     deleted without drain (I-S7);
//   - without an address: a Node that is Ready, or whose state is
//     unknown, refuses the whole scale-down (I-S5: it may be a discovery
//     failure); a NotReady or absent worker is deleted without reset
//     (I-S6, I-S7); a control plane only on etcd evidence (I-S9).
func planRemoval(f removalFacts) (removal, error) {
	r := removal{removalFacts: f, deleteMachine: f.machine, deleteNode: f.kube != kubeAbsent}
	if f.address != "" {
		r.drain = f.kube == kubeReady || f.kube == kubeNotReady || f.kube == kubeUnknown
		r.reset = true
		return r, nil
	}
	if f.kube == kubeReady || f.kube == kubeUnknown {
		return removal{}, fmt.Errorf("no address for %s but node is %s in k8s; aborting -- may be a discovery failure, not a reset node", f.host, f.kube)
	}
	r.etcdEvidence = f.controlPlane
	return r, nil
}

// staleMember is an etcd member no desired control plane explains, and
// whether converge removes it (why says why, or why not).
type staleMember struct {
	member talosapi.Member
	remove bool
	why    string
}

// staleMembers decides, from a member list that proves who is a member
// (a surviving control plane's, which needs a leader: survivor.members,
// I-S9, I-S10, I-S15), what becomes of each member cluster.yaml does not
// desire. Members of desired control planes are not its business, nor
// are those whose machine the inventory still holds (machine: scale-down
// resets and removes them). A member whose machine is gone is removed by
// id when its Kubernetes node is absent or NotReady; a Ready node, or a
// node list that failed, may mean a discovery failure, not a dead node
// (I-S5's rule), so it is kept and said, as is a member without a name
// (I-S10: which node it is cannot be told). None is removed unless the
// rest are a majority of the list (majorityStays).
func staleMembers(members []talosapi.Member, desired, machine func(string) bool, kube func(string) kubeState) []staleMember {
	var out []staleMember
	for _, m := range members {
		if desired(m.Hostname) || machine(m.Hostname) {
			continue
		}
		s := staleMember{member: m}
		switch k := kube(m.Hostname); {
		case m.Hostname == "":
			s.why = fmt.Sprintf("id %016x: %v", m.ID, errUnnamedMember)
		case k == kubeAbsent || k == kubeNotReady:
			s.remove = true
			s.why = fmt.Sprintf("id %016x: cluster.yaml does not desire it, its machine is gone, its Kubernetes node is %s", m.ID, k)
		default:
			s.why = fmt.Sprintf("id %016x: cluster.yaml does not desire it and its machine is gone, but its Kubernetes node is %s: it may be a discovery failure, not a dead node; remove the member by hand once it is known to be gone", m.ID, k)
		}
		out = append(out, s)
	}
	return majorityStays(out, len(members))
}

// majorityStays keeps every stale member when those removed would not
// leave a majority of the n members: a leader answered the list, so a
// majority is alive; were the members whose machine is gone that many,
// some of them must be alive, and the inventory's word proves nothing.
func majorityStays(stale []staleMember, n int) []staleMember {
	removed := 0
	for _, s := range stale {
		if s.remove {
			removed++
		}
	}
	if 2*removed < n {
		return stale
	}
	for i := range stale {
		if stale[i].remove {
			stale[i].remove = false
			stale[i].why = fmt.Sprintf("id %016x: %d of the %d members' machines are gone, yet a leader answered the member list, so some of them are alive; refusing to remove any", stale[i].member.ID, removed, n)
		}
	}
	return stale
}
