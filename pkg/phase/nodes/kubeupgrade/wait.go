package kubeupgrade

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
)

// StaticPodWaiting is what a mirror pod still lacks to run the step: ""
// when it runs the step's image at configuration version want or later
// and is Ready.
func StaticPodWaiting(p kube.StaticPod, to config.Version, want uint64) string {
	if v, err := ImageVersion(p.Image); err != nil || v.Compare(to) != 0 {
		return fmt.Sprintf("its mirror pod runs %s", p.Image)
	}
	if v, err := strconv.ParseUint(p.ConfigVersion, 10, 64); err != nil || v < want {
		return fmt.Sprintf("its mirror pod is at configuration version %q, not yet %d", p.ConfigVersion, want)
	}
	if !p.Ready {
		return "its mirror pod is not Ready"
	}
	return ""
}

// The budgets of an upgrade's waits (talosctl upgrade-k8s: 5 minutes for
// a mirror pod, 3 minutes, polled every 10 s, for a kubelet), scaled by
// TALOSC_TIME_SCALE.
const (
	staticPodBudget = 5 * time.Minute
	staticPodPoll   = 2 * time.Second
	kubeletBudget   = 3 * time.Minute
	kubeletPoll     = 10 * time.Second
)

// waitStaticPod waits until the node's configuration of the component has
// grown past before and its mirror pod runs the step's image, carries at
// least that configuration version (≥: talos#14258) and is Ready; a pod
// that does not stops the upgrade before any other node is touched.
func (u *Rollout) waitStaticPod(ctx context.Context, c Talos, n Node, comp Component, to config.Version, before uint64) error {
	kc, err := u.Cluster.Kube()
	if err != nil {
		return err
	}
	host := n.Machine.Hostname
	var want uint64
	return u.waitUntil(ctx, fmt.Sprintf("%s on %s", comp, host), u.Scale(staticPodBudget), u.Scale(staticPodPoll), func(ctx context.Context) (string, error) {
		if want <= before {
			v, err := c.ConfigVersion(ctx, n.Address, string(comp))
			if err != nil || v <= before {
				return fmt.Sprintf("its configuration version is still %d", before), err
			}
			want = v
		}
		pods, err := kc.StaticPods(ctx, string(comp))
		if err != nil {
			return "its mirror pod is unknown", err
		}
		i := slices.IndexFunc(pods, func(p kube.StaticPod) bool { return p.Node == host || p.HostIP == n.Address })
		if i < 0 {
			return "it has no mirror pod", nil
		}
		return StaticPodWaiting(pods[i], to, want), nil
	})
}

// waitKubelet waits until the node's Kubernetes node reports the step's
// kubelet version and is Ready.
func (u *Rollout) waitKubelet(ctx context.Context, n Node, to config.Version) error {
	kc, err := u.Cluster.Kube()
	if err != nil {
		return err
	}
	host := n.Machine.Hostname
	return u.waitUntil(ctx, "the kubelet of "+host, u.Scale(kubeletBudget), u.Scale(kubeletPoll), func(ctx context.Context) (string, error) {
		nodes, err := kc.Nodes(ctx)
		if err != nil {
			return "its node is unknown", err
		}
		i := slices.IndexFunc(nodes, func(k kube.Node) bool { return k.Name == host })
		switch {
		case i < 0:
			return "its node is gone", nil
		case !SameVersion(nodes[i].KubeletVersion, to):
			return fmt.Sprintf("its node reports kubelet %s", nodes[i].KubeletVersion), nil
		case !nodes[i].Ready:
			return "its node is not Ready", nil
		}
		return "", nil
	})
}

// waitUntil polls for a component: an error is waited through (a
// component restarting takes the API away), and the timeout names what
// was last missing.
func (u *Rollout) waitUntil(ctx context.Context, what string, budget, every time.Duration, check func(context.Context) (string, error)) error {
	riding := func(ctx context.Context) (string, error) {
		missing, err := check(ctx)
		if err != nil {
			missing = fmt.Sprintf("%s (%v)", missing, err)
		}
		return missing, nil
	}
	return u.Cluster.Poll(ctx, what, budget, every, riding, func(missing string) error {
		return fmt.Errorf("%s is not upgraded after %s: %s; stopping the upgrade before touching another node", what, budget, missing)
	})
}
