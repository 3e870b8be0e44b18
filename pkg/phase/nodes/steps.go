package nodes

import (
	"context"
	"fmt"
)

// step is one stage of a nodes converge.
type step struct {
	// name prefixes the step's errors.
	name string
	// when, if not nil, says whether the step runs.
	when func() bool
	do   func(context.Context) error
}

// steps is the converge, in the order of the reference's §3.1: nothing
// is removed, applied or restarted before the run knows the cluster is up
// (discover), removals come before applies, applies before the upgrades
// (Talos first, then Kubernetes, which alone moves existing nodes'
// Kubernetes versions) and those before new machines (I-R1), which boot
// at the pinned versions; leftover cordons are lifted before anything is
// rolled out (a cordoned node fails Talos's health barrier); the cluster
// is bootstrapped only when it is not up, and the final health check and
// provider finalization run only for real (the executor runs them as the
// waits of a real run: a plan waits for nothing).
func (r *run) steps() []step {
	// up: the Kubernetes API answered at discover; a plan of an up cluster
	// lists its restarts too (reboot).
	up := func() bool { return r.out.Up }
	// notUp: a cluster whose API did not answer at discover and whose etcd
	// never ran is bootstrapped (an existing but unreachable one failed at
	// discover already; a plan of one whose kubeconfig is to be recovered
	// bootstraps nothing); a plan records the bootstrap.
	notUp := func() bool { return !r.out.Up && !r.out.Bootstrapped }
	// moves: a live cluster whose API endpoint moves; stays: one whose
	// endpoint stays where it is.
	moves := func() bool {
		if !up() {
			return false
		}
		_, ok := r.movedEndpoint()
		return ok
	}
	stays := func() bool { return up() && !moves() }
	// moved: the Talos rollout just before moved nodes onto a new version;
	// the configurations are rolled out again (their document layout
	// follows the version).
	moved := func() bool { return r.moved }
	applyMoved := func(ctx context.Context) error {
		r.moved = false
		return r.applyConfigs(ctx)
	}
	upgradeTalos := func(ctx context.Context) error { return r.rollOutTalos(ctx, workersByPool) }
	realOnly := func(do func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error { return r.executor().do(ctx, action{then: do}) }
	}
	refreshInventory := func(ctx context.Context) error { return r.obs.refreshInventory(ctx, r.cloud) }
	// finalize is the provider's last step on a healthy cluster (Proxmox:
	// the per-VM cidata ISOs go), on the inventory the inventory step
	// refreshed with this run's machines.
	finalize := func(ctx context.Context) error { return r.cloud.FinalizeMachines(ctx, r.obs.inv, r.plan) }
	return []step{
		{"validate", nil, r.validate},
		{"identity", nil, r.ensureIdentity},
		{"discover", nil, r.discover},
		{"versions", up, r.checkVersions},
		{"uncordon", up, r.uncordon},
		{"scale-down", up, r.scaleDown},
		{"move-endpoint", moves, r.moveEndpoint},
		{"apply", stays, r.applyConfigs},
		{"upgrade-talos", up, upgradeTalos},
		{"apply-after-upgrade", moved, applyMoved},
		{"upgrade-kubernetes", up, r.upgradeKubernetes},
		{"compute", nil, r.compute},
		{"addresses", nil, realOnly(r.resolveAddresses)},
		{"talosconfig", nil, r.writeTalosconfig},
		{"bootstrap", notUp, r.bootstrap},
		{"health", nil, realOnly(r.health)},
		{"reinstall", nil, realOnly(r.reinstall)},
		{"apply-after-reinstall", moved, applyMoved},
		{"inventory", nil, realOnly(refreshInventory)},
		{"reboot", up, r.reboot},
		{"finalize", nil, realOnly(finalize)},
	}
}

// runSteps runs every step whose condition holds, in order; the first
// failure ends the run.
func (r *run) runSteps(ctx context.Context) error {
	for _, s := range r.steps() {
		if s.when != nil && !s.when() {
			continue
		}
		if err := s.do(ctx); err != nil {
			if s.name == "validate" || s.name == "discover" {
				return err // their errors already say what was checked
			}
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}
