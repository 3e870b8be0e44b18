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
	cps, workers := byRole(ops)
	r.in.Out.Info("moving the Kubernetes API endpoint %s -> %s", mv.from, mv.to)
	if err := r.execute(ctx, rollout{what: "moving the API endpoint of", healthAfterLast: true}, cps); err != nil {
		return err
	}
	err := r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindFile, Name: config.KubeconfigFile, Detail: fmt.Sprintf("server %s -> %s, from %s", mv.from, mv.to, r.cp1().Hostname), Disruption: state.DisruptionEndpointMove},
		func(ctx context.Context) error {
			if err := r.fetchKubeconfig(ctx); err != nil {
				return err
			}
			if err := r.waitAPI(ctx); err != nil {
				return fmt.Errorf("on the new address %s: %w", mv.to, err)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return r.execute(ctx, rollout{what: "moving the API endpoint of"}, workers)
}
