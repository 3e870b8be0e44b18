package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// bootstrap bootstraps etcd on the first control plane and fetches the
// kubeconfig from it (never from the VIP). A plan records both.
func (r *run) bootstrap(ctx context.Context) error {
	if r.etcdAtBootstrap {
		// The control planes that had no address at the start run only
		// once a real run started them: a plan has nothing to ask.
		err := r.plan.Verify(ctx, func(ctx context.Context) error {
			if verdict, why := decideEtcd(r.readEtcd(ctx)); verdict != etcdNeverRan {
				return fmt.Errorf("not bootstrapping: the control planes that had no address at the start of this run now run, and etcd %s (%s); re-run converge", map[etcdVerdict]string{etcdRan: "ran: this cluster was bootstrapped", etcdUnknown: "could not be read on every one of them"}[verdict], why)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	cp1Name := r.cp1().Hostname
	start := time.Now()
	err := r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindBootstrap, Name: cp1Name, Detail: "etcd on the first control plane"},
		func(ctx context.Context) error {
			c, cp1, err := r.clients.talosSession(ctx, r.id, r.obs)
			if err != nil {
				return err
			}
			r.in.Out.Info("waiting for the Talos API of %s (%s)", cp1Name, cp1)
			if err := c.WaitReachable(ctx, cp1, r.scaled(reachableBudget), r.scaled(reachablePoll), r.waiting(cp1Name)); err != nil {
				return err
			}
			if err := c.Bootstrap(ctx, cp1, r.scaled(bootstrapBudget)); err != nil {
				return err
			}
			r.in.Out.Info("bootstrapped %s in %s", cp1Name, time.Since(start).Round(time.Second))
			return nil
		})
	if err != nil {
		return err
	}
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindFile, Name: config.KubeconfigFile, Detail: "from " + cp1Name},
		func(ctx context.Context) error {
			if err := r.fetchKubeconfig(ctx); err != nil {
				return err
			}
			r.out.Bootstrapped = true
			return nil
		})
}

// fetchKubeconfig writes the kubeconfig the first control plane serves
// (never the VIP's) and forgets the client of the old one.
func (r *run) fetchKubeconfig(ctx context.Context) error {
	c, cp1, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	data, err := c.Kubeconfig(ctx, cp1)
	if err != nil {
		return err
	}
	path, _ := r.clients.kubeconfigPath()
	r.clients.forgetKube()
	return identity.WriteKubeconfig(path, data)
}
