package nodes

import (
	"context"
	"fmt"
	"os"

	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/upgrade"
)

// validate runs the whole-run validation (unless an earlier phase of this
// run recorded that it did, for this cluster.yaml and inventory) and takes
// the network and image from the earlier phases' sections, or reads them
// from the provider when this phase runs alone.
func (r *run) validate(ctx context.Context) error {
	inv, fact, err := preflight.Validated(ctx, r.in, r.cloud)
	if fact != nil {
		r.confirmed = fact.Removals
	}
	if inv != nil {
		r.obs.inv = inv
		r.out.Machines = inv.Machines
	}
	if err != nil {
		return err
	}
	net, ok, err := sections.ReadNetwork(r.in.State)
	switch {
	case err != nil:
		return err
	case ok:
		r.obs.net = &net.NetworkResult
	default:
		if r.obs.net, err = r.cloud.CurrentNetwork(ctx, sections.NetworkSpec(r.cfg)); err != nil {
			return err
		}
	}
	img, ok, err := sections.ReadImage(r.in.State)
	if err != nil {
		return err
	}
	if ok {
		r.obs.image = img.Image
	}
	return nil
}

// ensureIdentity loads talossecrets.yaml or, for a brand-new cluster,
// generates it (a dry run keeps it in memory).
func (r *run) ensureIdentity(ctx context.Context) error {
	id, created, err := identity.Ensure(ctx, r.cfg.Dir, r.cfg.Talos.Version, r.obs.inv.Hostnames(), r.in.DryRun)
	if err != nil {
		return err
	}
	r.id = id
	if created {
		r.plan.Record(state.Change{Action: state.ActionCreate, Kind: kindIdentity, Name: identity.FileName, Detail: "the cluster's CA and tokens (back it up)"})
	}
	for _, n := range id.Notes() {
		r.in.Out.Info("machine secrets: %s", n)
	}
	return nil
}

// discover decides whether the cluster is up (I-3..I-6): a kubeconfig
// whose API answers within three probes. With machines but no kubeconfig,
// the kubeconfig is recovered from the first control plane first. A
// kubeconfig whose API never answers, with machines, is an existing but
// unreachable cluster: nothing of the nodes is touched and the run fails.
func (r *run) discover(ctx context.Context) error {
	path, has := r.obs.kubeconfigPath()
	if !has && len(r.obs.inv.Machines) > 0 {
		if r.in.DryRun {
			r.in.Out.Info("would recover the kubeconfig from %s", r.cp1().Hostname)
			return nil
		}
		recovered, err := r.recoverKubeconfig(ctx, path)
		if err != nil || !recovered {
			return err
		}
		has = true
	}
	if !has {
		return nil
	}
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	up, probeErr := kc.Probe(ctx, probeAttempts, r.scaled(probeInterval))
	if up {
		r.out.Up, r.out.Bootstrapped = true, true
		r.obs.refreshNodes(ctx)
		return nil
	}
	if len(r.obs.inv.Machines) == 0 {
		return nil // a stale kubeconfig of a destroyed cluster
	}
	r.out.Bootstrapped = true
	r.in.Out.Warn("%d machine(s) already exist and %s exists, but the Kubernetes API never answered: this is NOT a fresh cluster", len(r.obs.inv.Machines), path)
	r.in.Out.Warn("refusing to recreate nodes or bootstrap an existing but unreachable cluster; deferring plugin converge hooks")
	return fmt.Errorf("cluster not up: existing but unreachable -- not bootstrapping (last probe: %w); check the network path to the API and re-run", probeErr)
}

// recoverKubeconfig fetches the kubeconfig from the first control plane
// (I-4). An unreachable node or an API that does not answer with it means
// an interrupted first run (I-5): the file is removed and the cluster is
// treated as fresh.
func (r *run) recoverKubeconfig(ctx context.Context, path string) (bool, error) {
	c, cp1, err := r.obs.talosSession(ctx)
	if err != nil {
		return false, nil //nolint:nilerr // no address yet: nothing to recover from
	}
	if err := c.WaitReachable(ctx, cp1, r.scaled(reachableBudget), r.scaled(reachablePoll), nil); err != nil {
		r.in.Out.Warn("kubeconfig recovery: %v", err)
		return false, nil
	}
	data, err := c.Kubeconfig(ctx, cp1)
	if err != nil {
		r.in.Out.Warn("kubeconfig recovery: %v", err)
		return false, nil
	}
	if err := identity.WriteKubeconfig(path, data); err != nil {
		return false, err
	}
	r.obs.forgetKube()
	if kc, err := r.obs.kubeClient(); err == nil {
		if up, _ := kc.Probe(ctx, probeAttempts, r.scaled(probeInterval)); up {
			r.in.Out.Info("recovered %s from %s", path, r.cp1().Hostname)
			return true, nil
		}
	}
	r.in.Out.Info("%s answers but its Kubernetes API does not: an interrupted first run, bootstrapping", r.cp1().Hostname)
	r.obs.forgetKube()
	return false, os.Remove(path)
}

// checkVersions reads what an up cluster runs: every existing node's
// Talos version and schematic, and the Kubernetes version, which configs
// are never generated against unknown (I-13) and never downgraded.
func (r *run) checkVersions(ctx context.Context) error {
	if err := r.readRunning(ctx, false); err != nil {
		return err
	}
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	running, err := r.apiVersion(ctx, kc)
	if err != nil {
		return err
	}
	return upgrade.CheckDowngrade(upgrade.KeyKubernetes, r.cfg.Kubernetes.Version, running)
}
