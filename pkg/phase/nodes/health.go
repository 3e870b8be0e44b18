package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// healthAttempts is how often a Talos health check is tried (I-R5).
const healthAttempts = 2

// healthTargets are the addresses of the desired control planes and
// workers, what Talos's server-side health check is told to expect, and of
// the control planes a scale-down has yet to remove (still etcd members,
// so the check must count them as control planes).
func (r *run) healthTargets() (cps, workers []string, err error) {
	for _, m := range r.desired {
		a, ok := r.obs.address(m.Hostname)
		if !ok {
			return nil, nil, fmt.Errorf("no address known for %s", m.Hostname)
		}
		if m.Role == config.RoleControlPlane {
			cps = append(cps, a)
		} else {
			workers = append(workers, a)
		}
	}
	return append(cps, r.obs.leavingControlPlanes()...), workers, nil
}

// controlPlanesHealthy is the barrier between control-plane changes:
// Talos's server-side health of the desired cluster, with no Kubernetes
// fallback (I-R5, I-S11).
func (r *run) controlPlanesHealthy(ctx context.Context) error {
	cps, workers, err := r.healthTargets()
	if err != nil {
		return err
	}
	return r.talosHealth(ctx, cps, workers)
}

// health waits for Talos's server-side health and for every desired node
// to be Ready; Kubernetes readiness is the fallback when the Talos check
// fails twice (the final check only, §3.1 step 15).
func (r *run) health(ctx context.Context) error {
	cps, workers, err := r.healthTargets()
	if err != nil {
		return err
	}
	r.in.Out.Info("waiting for the cluster to be healthy")
	talosErr := r.talosHealth(ctx, cps, workers)
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	names := make([]string, len(r.desired))
	for i, m := range r.desired {
		names[i] = m.Hostname
	}
	last := -1
	nodes, err := kc.WaitReady(ctx, names, r.scaled(readyBudget), r.scaled(readyPoll), func(ready, total int) {
		if ready != last {
			last = ready
			r.in.Out.Info("  %d of %d nodes Ready", ready, total)
		}
	})
	if err != nil {
		return fmt.Errorf("cluster is unhealthy after converge: %w", errors.Join(talosErr, err))
	}
	if talosErr != nil {
		r.in.Out.Warn("talos health check failed (%v); every node is Ready in Kubernetes, accepting that", talosErr)
	}
	r.out.Up = true
	r.obs.nodes, r.obs.nodesErr = nodes, nil
	r.out.Nodes = nodes
	r.out.KubernetesEndpoint = "https://" + r.obs.netKubernetes().Advertised + ":6443"
	talosconfig, _ := r.clientFile(config.TalosconfigFile)
	kubeconfig, _ := r.clientFile(config.KubeconfigFile)
	r.in.Out.Info("kube api: %s", r.out.KubernetesEndpoint)
	r.in.Out.Info("talosctl: talosctl --talosconfig %s -e %s -n %s <cmd>", talosconfig, cps[0], cps[0])
	r.in.Out.Info("kubectl: kubectl --kubeconfig %s get nodes", kubeconfig)
	return nil
}

// talosHealth runs Talos's server-side health check through the first
// control plane, against the internal VIP (I-A5), up to healthAttempts
// times.
func (r *run) talosHealth(ctx context.Context, cps, workers []string) error {
	c, _, err := r.obs.talosSession(ctx)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err = c.Health(ctx, talosapi.HealthOptions{
			ControlPlanes: cps, Workers: workers,
			K8sEndpoint: r.obs.vip(),
			Timeout:     r.scaled(healthBudget),
			Progress:    func(line string) { r.in.Out.Info("  %s", line) },
		})
		if err == nil || attempt == healthAttempts || ctx.Err() != nil {
			return err
		}
		r.in.Out.Warn("talos health check: %v; trying again", err)
	}
}

// finalize runs the provider's last step on a healthy cluster (Proxmox:
// the per-VM cidata ISOs go), on the inventory the reboot step refreshed
// with this run's machines.
func (r *run) finalize(ctx context.Context) error {
	return r.cloud.FinalizeMachines(ctx, r.obs.inv, r.plan)
}
