package nodes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/kube"
)

// waitStaticPod waits until the node's configuration of the component has
// grown past before and its mirror pod runs the step's image, carries at
// least that configuration version (≥: talos#14258) and is Ready; a pod
// that does not stops the upgrade before any other node is touched.
func (r *run) waitStaticPod(ctx context.Context, c talosAPI, n kubeNode, comp kubeComponent, to config.Version, before uint64) error {
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	host := n.machine.Hostname
	var want uint64
	return r.waitUntil(ctx, fmt.Sprintf("%s on %s", comp, host), r.scaled(staticPodBudget), r.scaled(staticPodPoll), func(ctx context.Context) (string, error) {
		if want <= before {
			v, err := c.ConfigVersion(ctx, n.address, string(comp))
			if err != nil || v <= before {
				return fmt.Sprintf("its configuration version is still %d", before), err
			}
			want = v
		}
		pods, err := kc.StaticPods(ctx, string(comp))
		if err != nil {
			return "its mirror pod is unknown", err
		}
		i := slices.IndexFunc(pods, func(p kube.StaticPod) bool { return p.Node == host || p.HostIP == n.address })
		if i < 0 {
			return "it has no mirror pod", nil
		}
		return staticPodWaiting(pods[i], to, want), nil
	})
}

// staticPodWaiting is what a mirror pod still lacks to run the step: ""
// when it runs the step's image at configuration version want or later
// and is Ready.
func staticPodWaiting(p kube.StaticPod, to config.Version, want uint64) string {
	if v, err := imageVersion(p.Image); err != nil || v.Compare(to) != 0 {
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

// waitKubelet waits until the node's Kubernetes node reports the step's
// kubelet version and is Ready.
func (r *run) waitKubelet(ctx context.Context, n kubeNode, to config.Version) error {
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	host := n.machine.Hostname
	return r.waitUntil(ctx, "the kubelet of "+host, r.scaled(kubeletBudget), r.scaled(kubeletPoll), func(ctx context.Context) (string, error) {
		nodes, err := kc.Nodes(ctx)
		if err != nil {
			return "its node is unknown", err
		}
		i := slices.IndexFunc(nodes, func(k kube.Node) bool { return k.Name == host })
		switch {
		case i < 0:
			return "its node is gone", nil
		case !sameVersion(nodes[i].KubeletVersion, to):
			return fmt.Sprintf("its node reports kubelet %s", nodes[i].KubeletVersion), nil
		case !nodes[i].Ready:
			return "its node is not Ready", nil
		}
		return "", nil
	})
}

// waitUntil asks check (backing off from ctxwait.FirstPoll to every poll),
// for up to budget, until it has nothing left to wait for; an error is
// waited through (a component restarting takes the API away), and the
// timeout names what was last missing.
func (r *run) waitUntil(ctx context.Context, what string, budget, poll time.Duration, check func(context.Context) (string, error)) error {
	start := time.Now()
	progress := throttle(func(elapsed time.Duration) {
		r.in.Out.Info("  still waiting for %s after %s", what, elapsed.Round(time.Second))
	})
	pause := ctxwait.NewBackoff(poll)
	for {
		missing, err := check(ctx)
		if err != nil {
			missing = fmt.Sprintf("%s (%v)", missing, err)
		}
		switch {
		case missing == "":
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Since(start) > budget:
			return fmt.Errorf("%s is not upgraded after %s: %s; stopping the upgrade before touching another node", what, budget, missing)
		}
		progress(time.Since(start))
		if err := pause.Sleep(ctx); err != nil {
			return err
		}
	}
}

// sameVersion reports that s is version v.
func sameVersion(s string, v config.Version) bool {
	got, err := config.ParseVersion(s)
	return err == nil && got.Compare(v) == 0
}
