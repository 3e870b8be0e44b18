package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
)

// restartPending restarts the machines whose sizing or NIC changes wait
// for a provider restart (reference §3.1 step 11, I-R11). Without --reboot
// it only warns. With it, one machine at a time, control planes first:
// the provider restart (through the plan, so a dry run lists them in
// order), the Talos API reachable again, then health: Talos's server-side
// check for a control plane, with no Kubernetes fallback, or the node
// Ready again for a worker. An unhealthy cluster stops the rollout.
func (r *run) restartPending(ctx context.Context, inv *provider.Inventory) error {
	hosts, err := r.cloud.PendingRestart(ctx, r.cfg, inv)
	if err != nil || len(hosts) == 0 {
		return err
	}
	// Desired order: control planes first, then the worker pools; machines
	// no longer desired are left to scale-down.
	var order []config.Machine
	for _, m := range r.desired {
		if slices.Contains(hosts, m.Hostname) {
			order = append(order, m)
		}
	}
	if len(order) == 0 {
		return nil
	}
	if !r.in.Reboot {
		names := make([]string, len(order))
		for i, m := range order {
			names[i] = m.Hostname
		}
		r.in.Out.Warn("%d node(s) need a restart to pick up pending sizing or NIC changes: %s -- rerun with converge --reboot", len(order), strings.Join(names, ", "))
		return nil
	}
	for _, m := range order {
		machine, ok := inv.Find(m.Hostname)
		if !ok {
			continue
		}
		if !r.in.DryRun {
			r.in.Out.Info("restarting %s to apply its pending sizing or NIC changes", m.Hostname)
		}
		if err := r.cloud.RestartMachine(ctx, r.cfg, machine, r.plan); err != nil {
			return err
		}
		if r.in.DryRun {
			continue
		}
		if err := r.afterRestart(ctx, m); err != nil {
			return fmt.Errorf("cluster unhealthy after rebooting %s; stopping the rollout: %w", m.Hostname, err)
		}
	}
	return nil
}

// afterRestart waits until the restarted machine's Talos API answers, then
// for the cluster's health as seen for its role.
func (r *run) afterRestart(ctx context.Context, m config.Machine) error {
	addr, ok := r.address(m.Hostname)
	if !ok {
		return fmt.Errorf("no address known for %s", m.Hostname)
	}
	c, err := r.talos(ctx, addr)
	if err != nil {
		return err
	}
	err = c.WaitReachable(ctx, addr, r.in.Env.Scale(reachableBudget), r.in.Env.Scale(reachablePoll), throttle(func(elapsed time.Duration) {
		r.in.Out.Info("  still waiting for %s after %s", m.Hostname, elapsed.Round(time.Second))
	}))
	c.Close()
	if err != nil {
		return err
	}
	if m.Role == config.RoleControlPlane {
		cps, workers, err := r.healthTargets()
		if err != nil {
			return err
		}
		return r.talosHealth(ctx, cps, workers)
	}
	path, _ := phase.ClientFile(r.cfg, config.KubeconfigFile)
	kc, err := r.kube(path)
	if err != nil {
		return err
	}
	_, err = kc.WaitReady(ctx, []string{m.Hostname}, r.in.Env.Scale(readyBudget), r.in.Env.Scale(readyPoll), nil)
	return err
}
