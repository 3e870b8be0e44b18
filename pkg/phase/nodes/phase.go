// Package nodes is the nodes phase: the cluster identity, the machines and
// their Talos configurations, bootstrap, the kubeconfig and talosconfig, and
// the health of the whole cluster, then day 2 on a live cluster: machines
// cluster.yaml no longer wants are drained, reset and deleted, changed
// machine configurations are rolled out, Kubernetes is upgraded one minor
// at a time when kubernetes.version moves, and leftover cordons lifted.
//
// A converge is one ordered list of steps (steps.go, in the order of the
// reference's §3.1), each a method over one run. What the run observed of
// the cluster (inventory, addresses, Kubernetes nodes, what each runs) is
// the observed value; the memoised Kubernetes client and Talos session
// are the run's clients; what should
// happen to which node is decided by pure functions (decisions.go,
// disruption.go, etcdevidence.go, kubeupgrade/plan.go) and carried out as
// ops by one executor (ops.go), each rollout choosing one policy value
// (the order of control planes and workers, the health barrier before,
// between and after); every wait is in barrier.go. A dry run only records
// the ops, so plan is converge with the mutations left out; a step never
// calls another. docs/architecture.md §4 lists the steps.
package nodes

import (
	"context"
	"errors"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes/etcdbackup"
	"github.com/talosc/talosc/pkg/phase/nodes/inspect"
	"github.com/talosc/talosc/pkg/state"
)

// Phase is the nodes phase.
type Phase struct{}

var _ phase.Phase = Phase{}

// Name is the section the phase owns.
func (Phase) Name() string { return phase.Nodes }

// Converge builds, grows, shrinks or rolls out the cluster.
func (Phase) Converge(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	r := newRun(in, cloud)
	defer r.clients.close()
	err = r.runSteps(ctx)
	if r.plan.DryRun { // a plan document carries what it observed, for converge --plan to compare
		r.out.Observed = r.obs.digest()
	}
	sec.Plan = append(sec.Plan, r.classified(r.plan.Changes())...)
	return errors.Join(err, sec.SetOutputs(r.out))
}

var _ phase.Backuper = Phase{}

// Backup takes the cluster's backup (etcdbackup.Run) and reports the
// newest one: the bundle it stored and read back, or, when it stored
// none, the target's newest as check reads it.
func (Phase) Backup(ctx context.Context, in *phase.Input) (any, error) {
	b, err := etcdbackup.Run(ctx, in)
	if err == nil {
		b.Newest = backup.Stored(in.Config, b.Target, b.Record, time.Now())
	} else {
		b.Newest = backup.Check(ctx, in.Config, in.ObjectStore, time.Now())
	}
	return b, err
}

// Check compares the pinned versions with the newest releases and with the
// running nodes, and reports drift, cordons, certificates and orphans
// (inspect.Check).
func (Phase) Check(ctx context.Context, in *phase.Input) (phase.Report, error) {
	return inspect.Check(ctx, in)
}

// Status reports the owned machines and, when the API answers, the nodes
// (inspect.Status).
func (Phase) Status(ctx context.Context, in *phase.Input, sec *state.Section) error {
	return inspect.Status(ctx, in, sec)
}
