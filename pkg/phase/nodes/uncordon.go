package nodes

import (
	"context"

	"github.com/talosc/talosc/pkg/state"
)

// uncordon lifts leftover cordons on the nodes cluster.yaml keeps
// (I-R10): converge never cordons a node it keeps, so a cordon is a
// leftover (an interrupted drain, or a manual one), and check reports it.
func (r *run) uncordon(ctx context.Context) error {
	lifted := false
	defer func() {
		if lifted && !r.in.DryRun {
			r.obs.refreshNodes(ctx)
		}
	}()
	for _, m := range r.desired {
		n, ok := r.obs.kubeNode(m.Hostname)
		if !ok || !n.Unschedulable {
			continue
		}
		err := r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: KindKubeNode, Name: m.Hostname, Detail: "uncordon (a leftover cordon)"},
			func(ctx context.Context) error {
				kc, err := r.obs.kubeClient()
				if err != nil {
					return err
				}
				return kc.Uncordon(ctx, m.Hostname)
			})
		if err != nil {
			return err
		}
		lifted = true
	}
	return nil
}
