package nodes

import (
	"context"
	"time"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// The actions more than one rollout takes, named once.

// drainAction cordons host and evicts its pods (drainNode); failed says
// what a failed drain means for the rollout (nil: going on is safe).
func (r *run) drainAction(host string, failed func(error) error) action {
	return action{
		change: &state.Change{Action: state.ActionUpdate, Kind: KindKubeNode, Name: host, Detail: "drain: cordon, evict its pods (PodDisruptionBudgets respected)", Disruption: state.DisruptionServiceRestart},
		fn: func(ctx context.Context) error {
			if err := drainNode(ctx, r.clients, r.in.Out, r.scaled, host); err != nil {
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
func forfeitLeadership(ctx context.Context, out *ui.Printer, c talosAPI, host, address, anyway string) {
	if err := c.EtcdForfeitLeadership(ctx, address); err != nil {
		out.Warn("%s: etcd leadership not handed over (%v); %s", host, err, anyway)
	}
}

// drainNode cordons host and evicts its pods (kubectl drain
// --ignore-daemonsets --delete-emptydir-data --timeout 5m, I-X1), with
// throttled progress lines on out; scale is TALOSC_TIME_SCALE's.
func drainNode(ctx context.Context, c *clients, out *ui.Printer, scale func(time.Duration) time.Duration, host string) error {
	kc, err := c.kubeClient()
	if err != nil {
		return err
	}
	var latest kube.DrainProgress
	report := throttle(func(time.Duration) { out.Info("  %s", latest) })
	return kc.Drain(ctx, host, kube.DrainOptions{
		Timeout:              scale(drainBudget),
		EvictErrorRetryDelay: scale(kube.DefaultEvictErrorRetryDelay),
		Poll:                 scale(kube.DefaultDrainPoll),
		Progress: func(p kube.DrainProgress) {
			latest = p
			report(0)
		},
	})
}
