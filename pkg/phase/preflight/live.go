package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// The running cluster's probes: the reference's three kube probes 10 s
// apart (I-3), each request bounded (I-X1); scaled by TALOSC_TIME_SCALE.
const (
	requestTimeout = 10 * time.Second
	probeAttempts  = 3
	probeInterval  = 10 * time.Second
	minTimeout     = 2 * time.Second
	// A node whose Talos API does not answer may be rebooting (a rollout
	// or an upgrade that an earlier run started and did not see through):
	// it is given a reboot's time to come back before it counts as silent.
	silentBudget = 5 * time.Minute
	silentPoll   = 10 * time.Second
)

// live is what validation saw of the running cluster.
type live struct {
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

// observe reads the running cluster. A cluster without a kubeconfig, or
// whose API never answers, is not up (the nodes phase decides what that
// means). An up cluster must answer everything else: its version, and
// the Talos API of every existing desired node through talosconfig's
// endpoint; what cannot be read refuses the run.
func observe(ctx context.Context, in *phase.Input, inv *provider.Inventory) (*live, error) {
	cfg := in.Config
	l := &live{}
	if tc, ok := phase.ClientFile(cfg, config.TalosconfigFile); ok {
		if ep, ok, _ := identity.ReadTalosconfigEndpoint(tc); ok {
			l.endpoint = ep
		}
	}
	path, ok := phase.ClientFile(cfg, config.KubeconfigFile)
	if !ok || len(inv.Machines) == 0 {
		return l, nil
	}
	kc, err := kube.Load(path, kube.Options{
		Timeout:       max(in.Env.Scale(requestTimeout), minTimeout),
		RetryInterval: in.Env.Scale(kube.DefaultRetryInterval),
	})
	if err != nil {
		return l, nil //nolint:nilerr // an unreadable kubeconfig is the nodes phase's to judge
	}
	if l.up, _ = kc.Probe(ctx, probeAttempts, in.Env.Scale(probeInterval)); !l.up {
		return l, nil
	}
	if l.nodes, err = kc.Nodes(ctx); err != nil {
		return nil, fmt.Errorf("the Kubernetes API answered but its nodes could not be listed (%w); refusing to decide what this converge would remove", err)
	}
	if l.kubeVersion, err = kc.ServerVersion(ctx); err != nil {
		return nil, fmt.Errorf("could not determine the running cluster's kubernetes version while the kube-api is up; refusing: %w", err)
	}
	return l, l.talosNodes(ctx, in, inv)
}

// talosNodes reads the Talos version of talosconfig's endpoint and of
// every existing desired node, which must all answer (audit S1/S4: a node
// that cannot be read cannot be kept in step with the cloud's firewall or
// its configuration; the version checks need every node's version).
func (l *live) talosNodes(ctx context.Context, in *phase.Input, inv *provider.Inventory) error {
	cfg := in.Config
	if l.endpoint == "" {
		return errors.New("the cluster is up but talosconfig records no endpoint; refusing to go on without the Talos API (re-run converge after restoring talosconfig)")
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, identity.FileName))
	if err != nil {
		return err
	}
	c, err := talosapi.Dial(ctx, id, cfg.Name, l.endpoint, talosapi.Options{
		CallTimeout:       max(in.Env.Scale(requestTimeout), minTimeout),
		RetryInterval:     in.Env.Scale(talosapi.DefaultRetryInterval),
		MaxReconnectDelay: in.Env.Scale(talosapi.DefaultMaxReconnectDelay),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	version := func(ctx context.Context, node string) (string, error) {
		v, err := c.Version(ctx, node)
		if err == nil {
			return v, nil
		}
		in.Out.Info("the Talos API of %s does not answer (%v); waiting up to %s for it (a node rebooting?)", node, err, in.Env.Scale(silentBudget))
		if werr := c.WaitReachable(ctx, node, in.Env.Scale(silentBudget), in.Env.Scale(silentPoll), nil); werr != nil {
			return "", err
		}
		return c.Version(ctx, node)
	}
	endpoint := nodeVersion{host: l.endpoint}
	if endpoint.version, err = version(ctx, l.endpoint); err != nil {
		return fmt.Errorf("the Talos API of %s (talosconfig's endpoint) does not answer (%w); refusing: the running Talos version and the nodes' state are unknown", l.endpoint, err)
	}
	var addrs []string
	var nodes []nodeVersion
	for _, m := range cfg.Hostnames() {
		im, ok := inv.Find(m.Hostname)
		switch {
		case !ok || !im.Address.IsValid():
		case im.Address.String() == l.endpoint:
			endpoint.host = m.Hostname
		default:
			addrs, nodes = append(addrs, im.Address.String()), append(nodes, nodeVersion{host: m.Hostname})
		}
	}
	var silent []string
	for i, err := range provider.FanOut(ctx, len(addrs), func(ctx context.Context, i int) (err error) {
		nodes[i].version, err = version(ctx, addrs[i])
		return err
	}) {
		if err != nil {
			silent = append(silent, fmt.Sprintf("%s (%v)", nodes[i].host, err))
		}
	}
	l.talos = append([]nodeVersion{endpoint}, nodes...)
	if len(silent) > 0 {
		return fmt.Errorf("%d existing node(s) do not answer the Talos API, so their state is unknown; refusing to change the cluster around them (bring them back, or remove them from cluster.yaml): %s",
			len(silent), strings.Join(silent, "; "))
	}
	return nil
}

// checkTailscale refuses toggling Tailscale on a live cluster (I-T1),
// decided from the shape of talosconfig's recorded endpoint: a MagicDNS
// name means the nodes joined a tailnet with a key, an address means they
// did not. Adding or removing a keyless section changes nothing the
// nodes depend on (I-T2, I-T3). Without a recorded endpoint, or when the
// cluster is not up, there is nothing live to protect.
func (l *live) checkTailscale(cfg *config.Cluster) error {
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
