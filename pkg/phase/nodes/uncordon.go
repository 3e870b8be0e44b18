package nodes

import (
	"context"

	"github.com/talosc/talosc/pkg/config"
)

// uncordon lifts leftover cordons on the nodes cluster.yaml keeps
// (I-R10): converge never cordons a node it keeps, so a cordon is a
// leftover (an interrupted drain, or a manual one), and check reports it.
// One node at a time, in desired order, no barrier; the first failure
// stops.
func (r *run) uncordon(ctx context.Context) error {
	var ops []op
	for _, m := range r.desired {
		if n, ok := r.obs.kubeNode(m.Hostname); ok && n.Unschedulable {
			ops = append(ops, op{host: m.Hostname, controlPlane: m.Role == config.RoleControlPlane, actions: []action{r.uncordonAction(m.Hostname, "uncordon (a leftover cordon)")}})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return r.executor().execute(ctx, policy{what: "uncordoning", order: inOrder, after: r.refreshNodes}, ops)
}
