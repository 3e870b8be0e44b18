package nodes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/upgrade"
)

// The Talos upgrade's budgets (I-R4: the version is polled for up to 30
// minutes), scaled by TALOSC_TIME_SCALE.
const (
	// upgradeBudget bounds one node's reboot into its new installation:
	// its boot ID must change within it.
	upgradeBudget = 30 * time.Minute
)

// talosUpgrade is one node's Talos upgrade, decided before any starts.
type talosUpgrade struct {
	machine config.Machine
	address string
	from    running
	// to is the pinned version, installer the pool's installer image and
	// schematic its schematic ID.
	to, installer, schematic string
	reason                   string
}

// rollOutTalos upgrades every existing node whose Talos version or
// schematic differs from what cluster.yaml pins for its pool (reference
// §3.1 step 9, I-R1..I-R6): before any new machine is created, control
// planes first, one at a time, each followed by Talos's health with no
// Kubernetes fallback, and the cluster healthy before the first is
// touched (so a resumed rollout re-establishes the barrier); then the
// workers as workers says (the upgrade step: pool by pool,
// max_unavailable at a time; the reinstall: all together). Each node:
// install the new image, drain, reboot, wait for its new boot at the new
// version and schematic, uncordon. A node whose install fails, or that
// comes back on its old version, stops the rollout. A real rollout onto a
// new version says so (moved): the configurations follow the document
// layout of the new version, in the step after.
func (r *run) rollOutTalos(ctx context.Context, workers order) error {
	ups, err := r.obs.talosUpgrades(r.cfg, r.desired)
	if err != nil || len(ups) == 0 {
		return err
	}
	if err := r.survivor().allowsUpgrade(ctx, ups); err != nil {
		return err
	}
	ops := make([]op, len(ups))
	newVersion := false
	for i, u := range ups {
		ops[i] = r.talosUpgradeOp(u)
		newVersion = newVersion || u.from.talos != u.to
	}
	after := func(ctx context.Context) error {
		r.obs.refreshNodes(ctx, r.clients)
		r.moved = newVersion
		return nil
	}
	register := func(ctx context.Context) error { return registerPlan(ctx, r.cfg) }
	return r.executor().execute(ctx, policy{what: "upgrading", order: workers, prepare: register, barrier: barrier{before: true, between: true, afterLast: true}, after: after, guard: guardControlPlanes}, ops)
}

// reinstall catches the nodes that came up short of their pool's
// extensions after a bootstrap or a scale-up (OpenStack boots every
// server from the shared base image): on a refreshed inventory, each
// node's schematic is read again and the short ones are upgraded onto
// their installer (§3.1 step 15): control planes one at a time, as
// always, the new workers in one pass.
func (r *run) reinstall(ctx context.Context) error {
	if err := r.obs.refreshInventory(ctx, r.cloud); err != nil {
		return err
	}
	if !slices.ContainsFunc(r.desired, func(m config.Machine) bool {
		_, exists := r.obs.inv.Find(m.Hostname)
		_, known := r.obs.runningOf(m.Hostname)
		return exists && !known
	}) {
		return nil // no machine came up since the versions were read
	}
	r.obs.refreshNodes(ctx, r.clients)
	if err := r.readRunning(ctx, true); err != nil {
		return err
	}
	return r.rollOutTalos(ctx, workersTogether)
}

// talosUpgrades decides which existing nodes of desired need an upgrade,
// in desired order (control planes first).
func (o *observed) talosUpgrades(cfg *config.Cluster, desired []config.Machine) ([]talosUpgrade, error) {
	installers, err := machineconfig.Installers(cfg)
	if err != nil {
		return nil, err
	}
	var ups []talosUpgrade
	for _, m := range desired {
		cur, ok := o.runningOf(m.Hostname)
		if !ok {
			continue // not created yet: it boots at the pin
		}
		ref, id := installerOf(installers, m.Pool)
		need, reason, err := upgrade.NeedsTalosUpgrade(cur.talos, cfg.Talos.Version, cur.schematic, id)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Hostname, err)
		}
		if !need {
			continue
		}
		addr, _ := o.address(m.Hostname) // readRunning required one
		ups = append(ups, talosUpgrade{machine: m, address: addr, from: cur, to: cfg.Talos.Version, installer: ref, schematic: id, reason: reason})
	}
	return ups, nil
}

// installerOf is pool's installer image and schematic ID.
func installerOf(plan *factory.InstallerPlan, pool string) (ref, schematic string) {
	ref = plan.ByPool[pool]
	for _, in := range plan.Installers {
		if in.Ref == ref {
			return ref, in.SchematicID
		}
	}
	return ref, ""
}

// registerPlan registers every installer's schematic with the Image
// Factory before a node pulls one.
func registerPlan(ctx context.Context, cfg *config.Cluster) error {
	installers, err := machineconfig.Installers(cfg)
	if err != nil {
		return err
	}
	fc, err := factory.ForCluster(cfg, nil)
	if err != nil {
		return err
	}
	return registerInstallers(ctx, fc, installers)
}

// talosUpgradeOp is one node's upgrade: install, drain, reboot and wait,
// uncordon.
func (r *run) talosUpgradeOp(u talosUpgrade) op {
	m := u.machine
	host := m.Hostname
	cp := m.Role == config.RoleControlPlane
	return op{host: host, controlPlane: cp, pool: m.Pool, actions: []action{
		{
			change: &state.Change{Action: state.ActionUpdate, Kind: KindTalosNode, Name: host, Detail: upgradeDetail(u)},
			fn: func(ctx context.Context) error {
				c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
				if err != nil {
					return err
				}
				r.in.Out.Info("installing %s on %s", u.installer, host)
				if err := install(ctx, r.in.Out, c, u); err != nil {
					return fmt.Errorf("install of %s on %s failed; stopping the rollout before another node is touched: %w", u.installer, host, err)
				}
				return nil
			},
		},
		r.drainAction(host, func(err error) error {
			return fmt.Errorf("drain of %s before its reboot failed; not rebooting it: %w", host, err)
		}),
		{
			change: &state.Change{Action: state.ActionUpdate, Kind: KindTalosNode, Name: host, Detail: fmt.Sprintf("reboot into %s, wait for its new boot", u.to), Disruption: state.DisruptionReboot},
			fn:     func(ctx context.Context) error { return r.rebootInto(ctx, u) },
		},
		r.uncordonAction(host, "uncordon"),
	}}
}

// upgradeDetail says what a node's upgrade changes.
func upgradeDetail(u talosUpgrade) string {
	if u.from.talos == u.to {
		return fmt.Sprintf("reinstall onto %s: %s", u.installer, u.reason)
	}
	return fmt.Sprintf("upgrade %s -> %s, installer %s", u.from.talos, u.to, u.installer)
}
