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
)

// live is what validation saw of the running cluster.
type live struct {
	// up: the Kubernetes API answered (within the probes).
	up bool
	// nodes are the Kubernetes nodes when up.
	nodes []kube.Node
	// kubeVersion is the API server's version when up.
	kubeVersion string
	// endpoint is talosconfig's recorded endpoint ("" without one);
	// talosVersion what it runs when the cluster is up.
	endpoint     string
	talosVersion string
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

// talosNodes reads the Talos version through talosconfig's endpoint and
// checks that every existing desired node answers Talos (audit S1/S4:
// a node that cannot be read cannot be kept in step with the cloud's
// firewall or its configuration).
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
	if l.talosVersion, err = c.Version(ctx, l.endpoint); err != nil {
		return fmt.Errorf("the Talos API of %s (talosconfig's endpoint) does not answer (%w); refusing: the running Talos version and the nodes' state are unknown", l.endpoint, err)
	}
	var addrs, hosts []string
	for _, m := range cfg.Hostnames() {
		if im, ok := inv.Find(m.Hostname); ok && im.Address.IsValid() && im.Address.String() != l.endpoint {
			addrs, hosts = append(addrs, im.Address.String()), append(hosts, m.Hostname)
		}
	}
	var silent []string
	for i, err := range provider.FanOut(ctx, len(addrs), func(ctx context.Context, i int) error {
		_, err := c.Version(ctx, addrs[i])
		return err
	}) {
		if err != nil {
			silent = append(silent, fmt.Sprintf("%s (%v)", hosts[i], err))
		}
	}
	if len(silent) > 0 {
		return fmt.Errorf("%d existing node(s) do not answer the Talos API, so their state is unknown; refusing to change the cluster around them (bring them back, or remove them from cluster.yaml): %s",
			len(silent), strings.Join(silent, "; "))
	}
	return nil
}

// checkVersions refuses pins other than what the cluster runs (I-11,
// I-12); a cluster that is not up is not compared.
func (l *live) checkVersions(cfg *config.Cluster) error {
	if !l.up {
		return nil
	}
	return errors.Join(
		CompareVersion("kubernetes", cfg.Kubernetes.Version, l.kubeVersion),
		CompareVersion("talos", cfg.Talos.Version, l.talosVersion),
	)
}

// CompareVersion refuses a pin other than the running version: downgrades
// are never supported (I-11, I-12), upgrades not by this build yet.
func CompareVersion(key, pinned, running string) error {
	p, err1 := config.ParseVersion(pinned)
	v, err2 := config.ParseVersion(running)
	if err1 != nil || err2 != nil {
		return nil
	}
	switch c := p.Compare(v); {
	case c < 0:
		return fmt.Errorf("%s.version %s is older than the running %s; %s downgrades are not supported", key, pinned, running, key)
	case c > 0:
		return fmt.Errorf("%s.version %s is newer than the running %s; upgrades are not supported by this talosc build yet: revert %s.version to %s", key, pinned, running, key, running)
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
