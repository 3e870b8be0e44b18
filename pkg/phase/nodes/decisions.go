package nodes

import (
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
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
