package nodes

import (
	"context"

	"github.com/talosc/talosc/pkg/state"
)

// The actions more than one rollout takes, named once.

// drainAction cordons host and evicts its pods (drainNode); failed says
// what a failed drain means for the rollout (nil: going on is safe).
func (r *run) drainAction(host string, failed func(error) error) action {
	return action{
		change: &state.Change{Action: state.ActionUpdate, Kind: KindKubeNode, Name: host, Detail: "drain: cordon, evict its pods (PodDisruptionBudgets respected)", Disruption: state.DisruptionServiceRestart},
		fn: func(ctx context.Context) error {
			if err := r.drainNode(ctx, host); err != nil {
				return failed(err)
			}
			return nil
		},
	}
}

// uncordonAction makes host schedulable again; detail says why.
func (r *run) uncordonAction(host, detail string) action {
	return action{
		change: &state.Change{Action: state.ActionUpdate, Kind: KindKubeNode, Name: host, Detail: detail},
		fn: func(ctx context.Context) error {
			kc, err := r.clients.kubeClient()
			if err != nil {
				return err
			}
			return kc.Uncordon(ctx, host)
		},
	}
}

// forfeitLeadership hands etcd leadership away from the control plane at
// address before it leaves or reboots (Omni's graceful leave: the member
// going is not the leader), warning when it cannot; anyway says what
// happens regardless ("rebooting it anyway").
func (r *run) forfeitLeadership(ctx context.Context, c talosAPI, host, address, anyway string) {
	if err := c.EtcdForfeitLeadership(ctx, address); err != nil {
		r.in.Out.Warn("%s: etcd leadership not handed over (%v); %s", host, err, anyway)
	}
}
