package nodes

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/nodes/etcdbackup"
	"github.com/talosc/talosc/pkg/provider"
)

// backupFirst takes the run's backup before its first risky change (what
// first names it: a change of etcd membership, a control plane's reboot
// or upgrade, a Kubernetes upgrade), once per run, when cluster.yaml has a
// backup section. A backup that fails stops the run before the change. A
// plan says it would take one; --no-backup skips it, said on every
// risky change.
func (r *run) backupFirst(ctx context.Context, what, first string) error {
	switch {
	case r.cfg.Backup == nil || r.backedUp:
		return nil
	case r.in.NoBackup:
		r.in.Out.Warn("--no-backup: no backup is taken before %s %s", what, first)
		return nil
	}
	r.backedUp = true
	return r.plan.Act(ctx, fmt.Sprintf("take a verified backup of etcd before %s %s", what, first), func(ctx context.Context) error {
		if err := r.takeBackup(ctx); err != nil {
			return fmt.Errorf("the backup before %s %s failed, so nothing was changed (converge --no-backup goes on without one): %w", what, first, err)
		}
		return nil
	})
}

// takeBackup is etcdbackup.Take on the run's own sessions.
func (r *run) takeBackup(ctx context.Context) error {
	t, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	o := etcdbackup.Options{Config: r.cfg, Talos: t, ControlPlanes: r.controlPlaneMachines(), Cloud: r.in.ObjectStore, Progress: r.in.Out.Info}
	if _, ok := r.clients.kubeconfigPath(); ok {
		if kc, err := r.clients.kubeClient(); err == nil {
			o.Kube = kc
		}
	}
	b, err := etcdbackup.Take(ctx, o)
	if err != nil {
		return err
	}
	r.in.Out.Info("backup %s stored in %s (etcd revision %d, %d keys, from %s)", b.Record.Name, b.Target, b.Record.Meta.Revision, b.Record.Meta.Keys, b.Record.Meta.Node)
	return nil
}

// controlPlaneMachines are the desired control planes with the addresses
// the run knows.
func (r *run) controlPlaneMachines() []provider.Machine {
	var cps []provider.Machine
	for _, m := range r.desired {
		if m.Role != config.RoleControlPlane {
			continue
		}
		pm := provider.Machine{Hostname: m.Hostname, Role: m.Role}
		if a, ok := r.obs.address(m.Hostname); ok {
			pm.Address, _ = netip.ParseAddr(a)
		}
		cps = append(cps, pm)
	}
	return cps
}
