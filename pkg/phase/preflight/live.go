package preflight

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// view is what validation saw of the running cluster.
type view struct {
	// up: the Kubernetes API answered (within the probes).
	up bool
	// nodes are the Kubernetes nodes when up.
	nodes []kube.Node
	// kubeVersion is the API server's version when up.
	kubeVersion string
	// endpoint is talosconfig's recorded endpoint ("" without one).
	endpoint string
	// talos is the Talos version every existing desired node runs (the
	// endpoint's first) when the cluster is up.
	talos []nodeVersion
}

// nodeVersion is the Talos version one node runs.
type nodeVersion struct {
	// host is the node's hostname, or talosconfig's endpoint when no
	// desired machine has its address.
	host    string
	version string
}

// observe reads the running cluster, through the sessions and probe the
// nodes phase reads it with (package live). A cluster without a
// kubeconfig, or whose API never answers, is not up (the nodes phase
// decides what that means). An up cluster must answer everything else:
// its version, and the Talos API of every existing desired node through
// talosconfig's endpoint; what cannot be read refuses the run.
func observe(ctx context.Context, in *phase.Input, inv *provider.Inventory) (*view, error) {
	cfg := in.Config
	l := &view{}
	if tc, ok := phase.ClientFile(cfg, config.TalosconfigFile); ok {
		if ep, ok, _ := identity.ReadTalosconfigEndpoint(tc); ok {
			l.endpoint = ep
		}
	}
	path, ok := phase.ClientFile(cfg, config.KubeconfigFile)
	if !ok || len(inv.Machines) == 0 {
		return l, nil
	}
	kc, err := live.OpenKube(in.Env)(path)
	if err != nil {
		return l, nil //nolint:nilerr // an unreadable kubeconfig is the nodes phase's to judge
	}
	if err := l.readKube(ctx, in, kc); err != nil {
		return nil, err
	}
	if !l.up {
		return l, nil
	}
	return l, l.talosNodes(ctx, in, kc, inv)
}

// readKube probes the API (I-3) and, when it answers, reads its nodes and
// version, which must then both be read: an API that answered the probe
// but not the node list could be hiding the nodes a converge would
// remove or leave behind.
func (l *view) readKube(ctx context.Context, in *phase.Input, kc live.KubeReader) error {
	var err error
	if l.up, _ = live.Probe(ctx, in.Env, kc); !l.up {
		return nil
	}
	if l.nodes, err = kc.Nodes(ctx); err != nil {
		return fmt.Errorf("the Kubernetes API answered but its nodes could not be listed (%w); refusing to decide what this converge would remove", err)
	}
	if l.kubeVersion, err = kc.ServerVersion(ctx); err != nil {
		return fmt.Errorf("could not determine the running cluster's kubernetes version while the kube-api is up; refusing: %w", err)
	}
	return nil
}

// checkTailscale refuses toggling Tailscale on a live cluster (I-T1),
// decided from the shape of talosconfig's recorded endpoint: a MagicDNS
// name means the nodes joined a tailnet with a key, an address means they
// did not. Adding or removing a keyless section changes nothing the
// nodes depend on (I-T2, I-T3). Without a recorded endpoint, or when the
// cluster is not up, there is nothing live to protect.
func (l *view) checkTailscale(cfg *config.Cluster) error {
	if !l.up || l.endpoint == "" {
		return nil
	}
	_, err := netip.ParseAddr(l.endpoint)
	joined := err != nil
	switch active := cfg.Tailscale.Active(); {
	case joined && !active:
		return fmt.Errorf("refusing: toggling tailscale on a live cluster: its nodes joined the tailnet (talosconfig's endpoint is %s), and cluster.yaml no longer gives tailscale.auth_key; restore it", l.endpoint)
	case !joined && active:
		return fmt.Errorf("refusing: toggling tailscale on a live cluster: its nodes run without a tailnet (talosconfig's endpoint is %s), and cluster.yaml now gives tailscale.auth_key; remove it, or recreate the cluster with it", l.endpoint)
	}
	return nil
}
