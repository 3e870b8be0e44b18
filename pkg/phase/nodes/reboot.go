package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// reboot restarts the machines whose sizing or NIC changes wait for a
// provider restart (reference §3.1 step 11, I-R11). Without --reboot it
// only warns. With it, one rollout: control planes first, one at a time,
// each reachable again and the cluster healthy (no Kubernetes fallback)
// before the next; workers each Ready again. A real run refreshed the
// inventory with the machines it created just before (the inventory step).
func (r *run) reboot(ctx context.Context) error {
	hosts, err := r.cloud.PendingRestart(ctx, r.obs.inv)
	if err != nil || len(hosts) == 0 {
		return err
	}
	// Desired order: control planes first, then the worker pools; machines
	// no longer desired are scale-down's.
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
	ops := make([]op, 0, len(order))
	for _, m := range order {
		if o, ok := r.restartOp(m); ok {
			ops = append(ops, o)
		}
	}
	return r.executor().execute(ctx, policy{what: "rebooting", order: workersOneByOne, barrier: barrier{between: true, afterLast: true}, guard: guardControlPlanes}, ops)
}

// restartOp restarts one machine through the provider, then waits for its
// Talos API and, for a worker, its node Ready.
func (r *run) restartOp(m config.Machine) (op, bool) {
	machine, ok := r.obs.inv.Find(m.Hostname)
	if !ok {
		return op{}, false
	}
	// before is the node's boot id ahead of the restart: the restart is
	// settled only by a new one (a node still answering from before its
	// restart took effect proves nothing). A machine the provider reports
	// stopped is started, and settled by answering.
	var before string
	return op{host: m.Hostname, controlPlane: m.Role == config.RoleControlPlane, actions: []action{
		{then: func(ctx context.Context) (err error) {
			if before, err = r.bootIDBefore(ctx, m, machine); err != nil {
				return err
			}
			r.in.Out.Info("restarting %s to apply its pending sizing or NIC changes", m.Hostname)
			return nil
		}},
		{
			fn: func(ctx context.Context) error { return r.cloud.RestartMachine(ctx, machine, r.plan) },
			then: func(ctx context.Context) error {
				if err := r.waiter().nodeBack(ctx, m, before, r.scaled(settleGrace)); err != nil {
					return fmt.Errorf("cluster unhealthy after rebooting %s; stopping the rollout: %w", m.Hostname, err)
				}
				return nil
			},
		},
	}}, true
}

// bootIDBefore is m's boot id before its restart; "" for a machine the
// provider reports stopped. A running machine whose boot id cannot be
// read is not restarted: its restart could not be told from its old boot
// still answering.
func (r *run) bootIDBefore(ctx context.Context, m config.Machine, machine provider.Machine) (string, error) {
	if machine.Stopped {
		return "", nil
	}
	addr, ok := r.obs.address(m.Hostname)
	if !ok {
		return "", fmt.Errorf("no address known for %s: its restart could not be told; not restarting it", m.Hostname)
	}
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return "", err
	}
	id, err := c.BootID(ctx, addr)
	if err != nil {
		return "", fmt.Errorf("the boot id of %s (provider status %q) could not be read, so its restart could not be told from its old boot: not restarting it: %w", m.Hostname, machine.Status, err)
	}
	return id, nil
}
