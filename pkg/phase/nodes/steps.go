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
	when func(*run) bool
	do   func(*run, context.Context) error
}

// steps is the converge, in the order of the reference's §3.1: nothing
// is removed, applied or restarted before the run knows the cluster is up
// (discover), removals come before applies, applies before the upgrades
// (Talos first, then Kubernetes, which alone moves existing nodes'
// Kubernetes versions) and those before new machines (I-R1), which boot
// at the pinned versions; leftover cordons are lifted before anything is
// rolled out (a cordoned node fails Talos's health barrier); the cluster
// is bootstrapped only when it is not up, and the final health check and
// provider finalization run only for real.
func (r *run) steps() []step {
	return []step{
		{"validate", nil, (*run).validate},
		{"identity", nil, (*run).ensureIdentity},
		{"discover", nil, (*run).discover},
		{"versions", (*run).isUp, (*run).checkVersions},
		{"uncordon", (*run).isUp, (*run).uncordon},
		{"scale-down", (*run).isUp, (*run).scaleDown},
		{"move-endpoint", (*run).endpointMoves, (*run).moveEndpoint},
		{"apply", (*run).endpointStays, (*run).applyConfigs},
		{"upgrade-talos", (*run).isUp, (*run).upgradeTalos},
		{"apply-after-upgrade", (*run).talosMoved, (*run).applyMoved},
		{"upgrade-kubernetes", (*run).isUp, (*run).upgradeKubernetes},
		{"compute", nil, (*run).compute},
		{"addresses", (*run).isRealRun, (*run).resolveAddresses},
		{"talosconfig", nil, (*run).writeTalosconfig},
		{"bootstrap", (*run).notUp, (*run).bootstrap},
		{"health", (*run).isRealRun, (*run).health},
		{"reinstall", (*run).isRealRun, (*run).reinstall},
		{"apply-after-reinstall", (*run).talosMoved, (*run).applyMoved},
		{"inventory", (*run).isRealRun, (*run).refreshInventory},
		{"reboot", (*run).rebootWanted, (*run).reboot},
		{"finalize", (*run).isRealRun, (*run).finalize},
	}
}

// runSteps runs every step whose condition holds, in order; the first
// failure ends the run.
func (r *run) runSteps(ctx context.Context) error {
	for _, s := range r.steps() {
		if s.when != nil && !s.when(r) {
			continue
		}
		if err := s.do(r, ctx); err != nil {
			if s.name == "validate" || s.name == "discover" {
				return err // their errors already say what was checked
			}
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// isUp reports that the Kubernetes API answered at discover.
func (r *run) isUp() bool { return r.out.Up }

// isRealRun reports a converge that mutates (not a plan).
func (r *run) isRealRun() bool { return !r.in.DryRun }

// notUp: a cluster whose API did not answer at discover and whose etcd
// never ran is bootstrapped (an existing but unreachable one failed at
// discover already; a plan of one whose kubeconfig is to be recovered
// bootstraps nothing); a plan records the bootstrap.
func (r *run) notUp() bool { return !r.out.Up && !r.out.Bootstrapped }

// rebootWanted: a cluster that is up (a plan of one lists the restarts),
// or a converge that just made it healthy.
func (r *run) rebootWanted() bool { return r.out.Up }

// finalize runs the provider's last step on a healthy cluster (Proxmox:
// the per-VM cidata ISOs go), on the inventory the reboot step refreshed
// with this run's machines.
func (r *run) finalize(ctx context.Context) error {
	return r.cloud.FinalizeMachines(ctx, r.obs.inv, r.plan)
}
