package labkube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// kubeHealth is a cluster's Kubernetes API as the Talos nodes' server-side
// health check asks it (talosnode.KubeAPI): the cluster's kube-apiserver
// of the moment, looked up at every check (the fleet asks for a cluster's
// KubeAPI once, before or after its API started).
type kubeHealth struct {
	k       *Kubernetes
	cluster *talosnode.Cluster
}

// HealthAPI is cluster c's API as its nodes' health check asks it (the
// fleet's Options.KubeAPI).
func (k *Kubernetes) HealthAPI(c *talosnode.Cluster) talosnode.KubeAPI {
	return &kubeHealth{k: k, cluster: c}
}

// Check asks the cluster's apiserver (kubeapi.Server.Check); without one
// the condition fails as a client of the endpoint would. A condition that
// does not apply (kubeapi.ErrSkip) is talosnode.ErrSkip: the check shows
// SKIP, as Talos does.
func (h *kubeHealth) Check(ctx context.Context, condition string, nodes []talosnode.NodeInfo) error {
	srv := h.k.Server(h.cluster.Name())
	if srv == nil {
		ep := h.cluster.Endpoint()
		return &url.Error{Op: "Get", URL: ep.JoinPath("api", "v1", "nodes").String(), Err: fmt.Errorf("dial tcp %s: connect: connection refused", ep.Host)}
	}
	var cps, workers []netip.Addr
	for _, n := range nodes {
		if n.ControlPlane {
			cps = append(cps, n.Address)
		} else {
			workers = append(workers, n.Address)
		}
	}
	err := srv.Check(ctx, condition, cps, workers)
	if errors.Is(err, kubeapi.ErrSkip) {
		return talosnode.ErrSkip
	}
	return err
}
