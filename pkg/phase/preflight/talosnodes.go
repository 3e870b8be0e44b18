package preflight

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// talosTargets are the existing desired nodes validation asks Talos.
type talosTargets struct {
	// endpointHost is the desired machine at talosconfig's endpoint, ""
	// when none is.
	endpointHost string
	// nodes and addrs are the other existing desired nodes and the
	// addresses they are asked at.
	nodes []nodeVersion
	addrs []string
	// unlisted are the nodes Kubernetes does not list (yet).
	unlisted []string
	// unknown are the existing machines that cannot be checked, each
	// with why.
	unknown []string
}

// targetsOf sorts the existing desired machines of an up cluster for the
// Talos check. A machine the inventory gives no address (on Proxmox, a VM
// whose guest agent is silent, or a stopped VM) is asked at its
// Kubernetes Node's InternalIP (I-V1); one without either cannot be
// checked. One Kubernetes does not list is asked too, and must be listed
// in the end (awaitListed).
func targetsOf(cfg *config.Cluster, inv *provider.Inventory, nodes []kube.Node, endpoint string) talosTargets {
	var t talosTargets
	for _, m := range cfg.Hostnames() {
		im, ok := inv.Find(m.Hostname)
		if !ok {
			continue
		}
		i := slices.IndexFunc(nodes, func(n kube.Node) bool { return n.Name == m.Hostname })
		addr := ""
		switch {
		case im.Address.IsValid():
			addr = im.Address.String()
		case i >= 0:
			addr = nodes[i].InternalIP
		}
		switch addr {
		case "":
			t.unknown = append(t.unknown, fmt.Sprintf("%s (no address: neither the provider nor a Kubernetes Node gives one; provider status %q)", m.Hostname, im.Status))
		case endpoint:
			t.endpointHost = m.Hostname
		default:
			t.addrs, t.nodes = append(t.addrs, addr), append(t.nodes, nodeVersion{host: m.Hostname})
		}
		if i < 0 && addr != "" {
			t.unlisted = append(t.unlisted, m.Hostname)
		}
	}
	return t
}

// talosNodes reads the Talos version of talosconfig's endpoint and of
// every existing desired node, which must all answer (I-V1: a node
// that cannot be read cannot be kept in step with the cloud's firewall or
// its configuration; the version checks need every node's version).
func (l *view) talosNodes(ctx context.Context, in *phase.Input, kc live.KubeReader, inv *provider.Inventory) error {
	cfg := in.Config
	if l.endpoint == "" {
		return errors.New("the cluster is up but talosconfig records no endpoint; refusing to go on without the Talos API (re-run converge after restoring talosconfig)")
	}
	t := targetsOf(cfg, inv, l.nodes, l.endpoint)
	if len(t.unknown) > 0 {
		return fmt.Errorf("%d existing machine(s) cannot be checked while the Kubernetes API answers, so their state is unknown; refusing before anything changes (start them and let them join, or remove them from cluster.yaml): %s",
			len(t.unknown), strings.Join(t.unknown, "; "))
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, config.TalosSecretsFile))
	if err != nil {
		return err
	}
	c, err := live.DialTalos(in.Env)(ctx, id, cfg.Name, l.endpoint)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := l.readVersions(ctx, in, c, t); err != nil {
		return err
	}
	return l.awaitListed(ctx, in, kc, t.unlisted)
}

// awaitListed gives the existing nodes Kubernetes does not list a
// reboot's time to register (a node of an interrupted run still joining),
// then refuses (I-V2): the nodes phase could not roll its
// configuration out, firewall included, while the network phase would
// change the cloud's security group ahead of it.
func (l *view) awaitListed(ctx context.Context, in *phase.Input, kc live.KubeReader, unlisted []string) error {
	if len(unlisted) == 0 {
		return nil
	}
	in.Out.Info("Kubernetes does not list %s; waiting up to %s for it to register", strings.Join(unlisted, ", "), in.Env.Scale(live.SilentBudget))
	deadline := time.Now().Add(in.Env.Scale(live.SilentBudget))
	for {
		nodes, err := kc.Nodes(ctx)
		if err != nil {
			return fmt.Errorf("the Kubernetes API answered but its nodes could not be listed (%w); refusing", err)
		}
		unlisted = slices.DeleteFunc(unlisted, func(h string) bool {
			return slices.ContainsFunc(nodes, func(n kube.Node) bool { return n.Name == h })
		})
		if len(unlisted) == 0 {
			l.nodes = nodes
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d existing node(s) answer Talos but Kubernetes does not list them, so their configuration and firewall could not be rolled out with the cloud's security group; refusing before anything changes (let them join, or remove them from cluster.yaml): %s",
				len(unlisted), strings.Join(unlisted, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(in.Env.Scale(live.SilentPoll)):
		}
	}
}

// readVersions asks every target its Talos version, the endpoint first; a
// node that does not answer is given a reboot's time (live.Version), then
// refuses.
func (l *view) readVersions(ctx context.Context, in *phase.Input, c live.TalosReader, t talosTargets) error {
	endpoint := nodeVersion{host: l.endpoint}
	if t.endpointHost != "" {
		endpoint.host = t.endpointHost
	}
	var err error
	if endpoint.version, err = live.Version(ctx, in, c, l.endpoint); err != nil {
		return fmt.Errorf("the Talos API of %s (talosconfig's endpoint) does not answer (%w); refusing: the running Talos version and the nodes' state are unknown", l.endpoint, err)
	}
	nodes := t.nodes
	var silent []string
	for i, err := range provider.FanOut(ctx, len(t.addrs), func(ctx context.Context, i int) (err error) {
		nodes[i].version, err = live.Version(ctx, in, c, t.addrs[i])
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
