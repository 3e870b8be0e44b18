package nodes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	k8supgrade "github.com/siderolabs/go-kubernetes/kubernetes/upgrade"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// kubeChecks runs go-kubernetes' checks of the step's path before the
// step changes anything: removed flags and feature gates in the control
// planes' static pods and the kubelets' arguments, and removed API
// resources still in use. What they find is shown as they word it.
func (r *run) kubeChecks(ctx context.Context, nodes []kubeupgrade.Node, st kubeupgrade.Step) error {
	c, kc, err := r.clients.both(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	path, err := k8supgrade.NewPath(st.From.String(), st.Version.String())
	if err != nil {
		return err
	}
	var cps, workers []string
	for _, n := range nodes {
		if n.ControlPlane() {
			cps = append(cps, n.Address)
		} else {
			workers = append(workers, n.Address)
		}
	}
	logf := func(format string, a ...any) { r.in.Out.Info("  %s", fmt.Sprintf(format, a...)) }
	checks, err := k8supgrade.NewChecks(path, c.COSI(), kc.RESTConfig(), cps, workers, logf)
	if err != nil {
		return err
	}
	if err := checks.Run(ctx); err != nil {
		return fmt.Errorf("the checks of the upgrade path %s failed: %w", path, err)
	}
	return nil
}

// prePull pulls every node's images, nodes concurrently, so that no
// component waits for its image while its node is being upgraded.
func (r *run) prePull(ctx context.Context, pulls [][]kubeupgrade.Pull) error {
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	return errors.Join(provider.FanOut(ctx, len(pulls), func(ctx context.Context, i int) error {
		for _, p := range pulls[i] {
			if err := c.PullImage(ctx, p.Address, p.Ref, p.System); err != nil {
				return fmt.Errorf("pull %s on %s: %w", p.Ref, p.Host, err)
			}
		}
		return nil
	})...)
}

// upgradeComponent applies n's configuration with one more component at
// the step's version, then waits: for a static pod, until its mirror pod
// runs the new configuration and image and is Ready; for a kubelet, until
// its Node reports the version and is Ready; kube-proxy's image changes
// only the manifests synced at the end of the step.
func (r *run) upgradeComponent(ctx context.Context, input machineconfig.Input, n *kubeupgrade.Node, ch kubeupgrade.Change, to config.Version) error {
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	var before uint64
	if ch.Component.StaticPod() {
		if before, err = c.ConfigVersion(ctx, n.Address, string(ch.Component)); err != nil {
			return err
		}
	}
	images := n.Images
	*ch.Component.Image(&images) = ch.Image
	mc, err := r.generate(input, n.Machine, images)
	if err != nil {
		return err
	}
	if _, err := r.applyConfig(ctx, n.Machine, n.Address, mc.Bytes()); err != nil {
		return err
	}
	n.Images = images
	r.obs.images[n.Machine.Hostname] = images
	switch {
	case ch.Component.StaticPod():
		return r.waiter().waitStaticPod(ctx, c, *n, ch.Component, to, before)
	case ch.Component == kubeupgrade.Kubelet:
		return r.waiter().waitKubelet(ctx, *n, to)
	}
	return nil
}

// syncManifests applies the first control plane's bootstrap manifests
// (rendered from its configuration, so at the step's kube-proxy image)
// with server-side apply as field manager "talos", as upgrade-k8s does:
// Talos itself only creates missing ones. Namespaces and CRDs go first,
// then ConfigMaps and Secrets, as Talos's own apply stages them.
func (r *run) syncManifests(ctx context.Context) error {
	addr, ok := r.obs.address(r.cp1().Hostname)
	if !ok {
		return fmt.Errorf("no address known for %s", r.cp1().Hostname)
	}
	c, kc, err := r.clients.both(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	objs, err := c.Manifests(ctx, addr)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b map[string]any) int {
		return cmp.Compare(kubeupgrade.ManifestStage(a), kubeupgrade.ManifestStage(b))
	})
	for _, o := range objs {
		if err := kc.Apply(ctx, o, "talos"); err != nil {
			return fmt.Errorf("apply %v %s: %w", o["kind"], kubeupgrade.ObjectName(o), err)
		}
	}
	return nil
}
