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
// step 4: a Proxmox kubeapi_vip edit). It is read once, before the
// configurations are rolled out: the move step itself rewrites the
// kubeconfig.
func (r *run) movedEndpoint() (endpointMove, bool) {
	if r.move == nil {
		r.move = &endpointMove{}
		path, ok := r.clients.kubeconfigPath()
		to := r.obs.netKubernetes().Advertised
		if !ok || to == "" {
			return endpointMove{}, false
		}
		kc, _, err := identity.ReadKubeconfig(path)
		if err != nil || kc == nil || kc.ServerHost == "" || kc.ServerHost == to {
			return endpointMove{}, false
		}
		*r.move = endpointMove{from: kc.ServerHost, to: to}
	}
	return *r.move, r.move.to != ""
}

// moveEndpoint rolls an endpoint move out (I-A3), as the apply step rolls
// configurations (applyConfigs): the control planes are re-applied and
// settled one at a time, the kubeconfig is regenerated from a real control
// plane, the API must answer on the new address within endpointBudget,
// and only then are the workers re-applied.
func (r *run) moveEndpoint(ctx context.Context) error {
	mv, _ := r.movedEndpoint()
	ops, _, err := r.applyOps(ctx)
	if err != nil || len(ops) == 0 {
		return err
	}
	cps, workers := byRole(ops)
	r.in.Out.Info("moving the Kubernetes API endpoint %s -> %s", mv.from, mv.to)
	const what = "moving the API endpoint of"
	if err := r.executor().execute(ctx, policy{what: what, barrier: barrier{between: true, afterLast: true}}, append(cps, r.kubeconfigOp(mv))); err != nil {
		return err
	}
	return r.executor().execute(ctx, policy{what: what, after: r.refreshNodes}, workers)
}

// kubeconfigOp regenerates the kubeconfig for the moved endpoint and waits
// for the API to answer there; it takes no barrier of its own.
func (r *run) kubeconfigOp(mv endpointMove) op {
	change := state.Change{Action: state.ActionUpdate, Kind: kindFile, Name: config.KubeconfigFile, Detail: fmt.Sprintf("server %s -> %s, from %s", mv.from, mv.to, r.cp1().Hostname), Disruption: state.DisruptionEndpointMove}
	return op{host: config.KubeconfigFile, controlPlane: true, settled: func() bool { return false }, actions: []action{{
		change: &change,
		fn: func(ctx context.Context) error {
			if err := r.fetchKubeconfig(ctx); err != nil {
				return err
			}
			if err := r.waiter().waitAPI(ctx); err != nil {
				return fmt.Errorf("on the new address %s: %w", mv.to, err)
			}
			return nil
		},
	}}}
}
