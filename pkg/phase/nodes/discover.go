package nodes

import (
	"context"
	"fmt"
	"os"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/ui"
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
		r.out.Machines = inv.Machines
	}
	var net *provider.NetworkResult
	var img provider.Image
	if err == nil {
		net, img, err = earlierSections(ctx, r.in, r.cloud)
	}
	r.obs = newObserved(inv, net, img, nil)
	return err
}

// earlierSections are the network and the image the earlier phases of
// this run recorded, else (the network) read from the provider.
func earlierSections(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.NetworkResult, provider.Image, error) {
	var img provider.Image
	net, ok, err := sections.ReadNetwork(in.State)
	var result *provider.NetworkResult
	switch {
	case err != nil:
		return nil, img, err
	case ok:
		result = &net.NetworkResult
	default:
		if result, err = cloud.CurrentNetwork(ctx, sections.NetworkSpec(in.Config)); err != nil {
			return result, img, err
		}
	}
	read, ok, err := sections.ReadImage(in.State)
	if err != nil {
		return result, img, err
	}
	if ok {
		img = read.Image
	}
	return result, img, nil
}

// ensureIdentity loads talossecrets.yaml or, for a brand-new cluster,
// generates it (a dry run keeps it in memory). identity.Ensure takes the
// plan's mode: it words its notes and tightens a file's mode by it.
func (r *run) ensureIdentity(ctx context.Context) error {
	id, created, err := identity.Ensure(ctx, r.cfg.Dir, r.cfg.Talos.Version, r.obs.inv.Hostnames(), r.plan.DryRun)
	if err != nil {
		return err
	}
	r.id = id
	if created {
		r.plan.Record(state.Change{Action: state.ActionCreate, Kind: kindIdentity, Name: config.TalosSecretsFile, Detail: "the cluster's CA and tokens (back it up)"})
	}
	for _, n := range id.Notes() {
		r.in.Out.Info("machine secrets: %s", n)
	}
	return nil
}

// discover decides whether the cluster is up (I-3..I-6): a kubeconfig
// whose API answers within three probes. Otherwise, with machines, it asks
// the control planes whether etcd ever ran (decideEtcd), since a Talos
// control plane serves a kubeconfig whether or not it was bootstrapped:
//   - it ran: an existing cluster. Without a kubeconfig, one is recovered
//     from the first control plane (I-4); an API that still does not
//     answer is an existing but unreachable cluster: nothing of the nodes
//     is touched and the run fails (I-6);
//   - it never ran on any control plane: an interrupted first run (I-5),
//     bootstrapped like a fresh one; a kubeconfig a killed run recovered
//     is stale and replaced by the one fetched after bootstrap;
//   - unknown (a control plane unreadable): the run fails, touching
//     nothing.
//
// A plan reads the same evidence and reports the same decision.
func (r *run) discover(ctx context.Context) error {
	path, has := r.clients.kubeconfigPath()
	var probeErr error
	if has {
		up, err := r.probe(ctx)
		if up {
			r.markUp(ctx)
			return nil
		}
		probeErr = err
	}
	if len(r.obs.inv.Machines) == 0 {
		return nil // a fresh cluster; a kubeconfig left is a destroyed cluster's
	}
	cps := r.readEtcd(ctx)
	verdict, why := decideEtcd(cps)
	if verdict == etcdUnknown && onlyWithoutAddress(cps) {
		// Machines a killed run created and never started: they are
		// started before the bootstrap, which asks every control plane
		// again then and bootstraps only if none ever ran etcd.
		r.etcdAtBootstrap = true
		r.in.Out.Info("some control planes have no address yet (%s): whether etcd ever ran is decided once they run, before any bootstrap", why)
		return nil
	}
	switch verdict {
	case etcdNeverRan:
		return r.interruptedFirstRun(ctx, path, has, why)
	case etcdUnknown:
		r.in.Out.Warn("%d machine(s) already exist and the Kubernetes API did not answer, but whether etcd was ever bootstrapped could not be read: %s", len(r.obs.inv.Machines), why)
		r.in.Out.Warn("refusing to bootstrap a cluster that may exist; deferring plugin converge hooks")
		return fmt.Errorf("cluster state unknown: etcd could not be read on every control plane (%s) -- not bootstrapping; check that every control plane's Talos API answers and re-run", why)
	case etcdRan: // an existing cluster, below
	}
	r.out.Bootstrapped = true
	if !has {
		return r.plan.Act(ctx, fmt.Sprintf("recover the kubeconfig from %s (etcd ran: %s)", r.cp1().Hostname, why), func(ctx context.Context) error {
			if err := r.recoverKubeconfig(ctx, path); err != nil {
				return fmt.Errorf("cluster not up: existing (etcd ran: %s) but its %s could not be recovered -- not bootstrapping: %w; re-run", why, config.KubeconfigFile, err)
			}
			up, err := r.probe(ctx)
			if !up {
				return refuseUnreachable(r.in.Out, len(r.obs.inv.Machines), why, err)
			}
			r.in.Out.Info("recovered %s from %s", path, r.cp1().Hostname)
			r.markUp(ctx)
			return nil
		})
	}
	return refuseUnreachable(r.in.Out, len(r.obs.inv.Machines), why, probeErr)
}

// refuseUnreachable refuses an existing cluster of machines (etcd ran)
// whose Kubernetes API never answered (I-6), touching none of its nodes.
func refuseUnreachable(out *ui.Printer, machines int, why string, probeErr error) error {
	out.Warn("%d machine(s) already exist and etcd ran (%s), but the Kubernetes API never answered: this is NOT a fresh cluster", machines, why)
	out.Warn("refusing to recreate nodes or bootstrap an existing but unreachable cluster; deferring plugin converge hooks")
	return fmt.Errorf("cluster not up: existing but unreachable -- not bootstrapping (last probe: %w); check the network path to the API and re-run", probeErr)
}

// probe asks the kubeconfig's API, three times at most.
func (r *run) probe(ctx context.Context) (bool, error) {
	kc, err := r.clients.kubeClient()
	if err != nil {
		return false, err
	}
	return live.Probe(ctx, r.in.Env, kc)
}

// markUp records an up cluster and lists its nodes.
func (r *run) markUp(ctx context.Context) {
	r.out.Up, r.out.Bootstrapped, r.upAtDiscover = true, true, true
	r.obs.refreshNodes(ctx, r.clients)
}

// interruptedFirstRun lets the bootstrap step run on a cluster whose
// etcd never ran, after removing the stale kubeconfig a killed run may
// have recovered (a plan only says so).
func (r *run) interruptedFirstRun(ctx context.Context, path string, has bool, why string) error {
	r.in.Out.Info("no control plane's etcd ever ran (%s): an interrupted first run, bootstrapping", why)
	if !has {
		return nil
	}
	return r.plan.Act(ctx, fmt.Sprintf("replace the stale %s with the one fetched after bootstrap", path), func(context.Context) error {
		r.clients.forgetKube()
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove the stale %s: %w", path, err)
		}
		return nil
	})
}

// recoverKubeconfig fetches the kubeconfig from the first control plane
// of a cluster whose etcd ran (I-4) and writes it.
func (r *run) recoverKubeconfig(ctx context.Context, path string) error {
	c, cp1, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	if err := c.WaitReachable(ctx, cp1, r.scaled(reachableBudget), r.scaled(reachablePoll), r.waiting(r.cp1().Hostname)); err != nil {
		return err
	}
	data, err := c.Kubeconfig(ctx, cp1)
	if err != nil {
		return err
	}
	r.clients.forgetKube()
	return identity.WriteKubeconfig(path, data)
}

// checkVersions reads what an up cluster runs: every existing node's
// Talos version and schematic, and the Kubernetes version, which configs
// are never generated against unknown (I-13) and never downgraded.
func (r *run) checkVersions(ctx context.Context) error {
	if err := r.readRunning(ctx, false); err != nil {
		return err
	}
	kc, err := r.clients.kubeClient()
	if err != nil {
		return err
	}
	running, err := kubeupgrade.APIVersion(ctx, kc)
	if err != nil {
		return err
	}
	return upgrade.CheckDowngrade(upgrade.KeyKubernetes, r.cfg.Kubernetes.Version, running)
}
