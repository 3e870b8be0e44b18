package kubeupgrade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	k8supgrade "github.com/siderolabs/go-kubernetes/kubernetes/upgrade"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// checks runs go-kubernetes' checks of the step's path before the step
// changes anything: removed flags and feature gates in the control
// planes' static pods and the kubelets' arguments, and removed API
// resources still in use. What they find is shown as they word it.
func (u *Rollout) checks(ctx context.Context, st Step) error {
	c, _, err := u.Cluster.Talos(ctx)
	if err != nil {
		return err
	}
	kc, err := u.Cluster.Kube()
	if err != nil {
		return err
	}
	path, err := k8supgrade.NewPath(st.From.String(), st.Version.String())
	if err != nil {
		return err
	}
	var cps, workers []string
	for _, n := range u.Nodes {
		if n.ControlPlane() {
			cps = append(cps, n.Address)
		} else {
			workers = append(workers, n.Address)
		}
	}
	logf := func(format string, a ...any) { u.Out.Info("  %s", fmt.Sprintf(format, a...)) }
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
func (u *Rollout) prePull(ctx context.Context, pulls [][]Pull) error {
	c, _, err := u.Cluster.Talos(ctx)
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
func (u *Rollout) upgradeComponent(ctx context.Context, n *Node, ch Change, to config.Version) error {
	c, _, err := u.Cluster.Talos(ctx)
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
	if err := u.Cluster.Apply(ctx, *n, images); err != nil {
		return err
	}
	n.Images = images
	switch {
	case ch.Component.StaticPod():
		return u.waitStaticPod(ctx, c, *n, ch.Component, to, before)
	case ch.Component == Kubelet:
		return u.waitKubelet(ctx, *n, to)
	}
	return nil
}

// syncManifests applies the first control plane's bootstrap manifests
// (rendered from its configuration, so at the step's kube-proxy image)
// with server-side apply as field manager "talos", as upgrade-k8s does:
// Talos itself only creates missing ones. Namespaces and CRDs go first,
// then ConfigMaps and Secrets, as Talos's own apply stages them.
func (u *Rollout) syncManifests(ctx context.Context) error {
	c, addr, err := u.Cluster.Talos(ctx)
	if err != nil {
		return err
	}
	kc, err := u.Cluster.Kube()
	if err != nil {
		return err
	}
	objs, err := c.Manifests(ctx, addr)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b map[string]any) int {
		return cmp.Compare(ManifestStage(a), ManifestStage(b))
	})
	for _, o := range objs {
		if err := kc.Apply(ctx, o, "talos"); err != nil {
			return fmt.Errorf("apply %v %s: %w", o["kind"], ObjectName(o), err)
		}
	}
	return nil
}

// apiAt checks that the API server reports version to after its step.
func (u *Rollout) apiAt(ctx context.Context, to config.Version) error {
	kc, err := u.Cluster.Kube()
	if err != nil {
		return err
	}
	api, err := APIVersion(ctx, kc)
	if err != nil {
		return err
	}
	if !SameVersion(api, to) {
		return fmt.Errorf("after its step to %s the API server reports version %q; stopping the upgrade", to, api)
	}
	return nil
}

// APIVersion reads the API server's version (retried): configs are never
// generated against an unknown one (I-13).
func APIVersion(ctx context.Context, kc Kube) (string, error) {
	v, err := kc.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("could not determine the running cluster's kubernetes version while the kube-api is up; refusing to generate machine configs against an unknown version: %w", err)
	}
	return v, nil
}
