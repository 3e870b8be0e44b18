package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// endpointBudget bounds the wait for the API on a moved endpoint (I-X2).
const endpointBudget = 300 * time.Second

// endpointMove is a Kubernetes API endpoint that moves: the kubeconfig
// talks to from, cluster.yaml (the network phase) says to.
type endpointMove struct{ from, to string }

// movedEndpoint reports the move of the API endpoint, when the recorded
// kubeconfig's server host is not the advertised address (reference §3.1
// step 4: a Proxmox kubeapi_vip edit).
func (r *run) movedEndpoint() (endpointMove, bool) {
	path, ok := r.obs.kubeconfigPath()
	to := r.obs.netKubernetes().Advertised
	if !ok || to == "" {
		return endpointMove{}, false
	}
	kc, _, err := identity.ReadKubeconfig(path)
	if err != nil || kc == nil || kc.ServerHost == "" || kc.ServerHost == to {
		return endpointMove{}, false
	}
	return endpointMove{from: kc.ServerHost, to: to}, true
}

// moveEndpoint rolls an endpoint move out (I-A3): the control planes are
// re-applied and settled one at a time, the kubeconfig is regenerated from
// a real control plane, the API must answer on the new address within
// endpointBudget, and only then are the workers re-applied.
func (r *run) moveEndpoint(ctx context.Context, mv endpointMove, ops []op) error {
	var cps, workers []op
	for _, o := range ops {
		if o.controlPlane {
			cps = append(cps, o)
		} else {
			workers = append(workers, o)
		}
	}
	r.in.Out.Info("moving the Kubernetes API endpoint %s -> %s", mv.from, mv.to)
	if err := r.execute(ctx, rollout{what: "moving the API endpoint of", healthAfterLast: true}, cps); err != nil {
		return err
	}
	path, _ := r.obs.kubeconfigPath()
	err := r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindFile, Name: config.KubeconfigFile, Detail: fmt.Sprintf("server %s -> %s, from %s", mv.from, mv.to, r.cp1().Hostname)},
		func(ctx context.Context) error {
			c, cp1, err := r.obs.talosSession(ctx)
			if err != nil {
				return err
			}
			data, err := c.Kubeconfig(ctx, cp1)
			if err != nil {
				return err
			}
			if err := identity.WriteKubeconfig(path, data); err != nil {
				return err
			}
			r.obs.forgetKube()
			kc, err := r.obs.kubeClient()
			if err != nil {
				return err
			}
			attempts := max(int(endpointBudget/probeInterval), 1)
			if up, err := kc.Probe(ctx, attempts, r.scaled(probeInterval)); !up {
				return fmt.Errorf("the Kubernetes API did not answer on the new address %s within %s: %w", mv.to, r.scaled(endpointBudget), err)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return r.execute(ctx, rollout{what: "moving the API endpoint of"}, workers)
}
