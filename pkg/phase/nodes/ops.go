package nodes

import (
	"context"
	"errors"
	"fmt"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// action is one change to one node, in one shape. With a change, the
// change is recorded through the plan and fn makes it in a real run only;
// without one, fn runs in a dry run too: a provider call that records its
// own change through the plan, or a read the rollout needs (the checks of
// a Kubernetes upgrade step). then, if not nil, runs after fn in a real run
// only: the wait for the change to take (a restart settled), or, with no
// fn, a read that only a real run needs (a boot ID before a restart). fn
// may decide that a failure is safe to go on from (a drain of a NotReady
// node), returning nil after a warning.
type action struct {
	change *state.Change
	fn     func(ctx context.Context) error
	then   func(ctx context.Context) error
}

// executor carries ops out: the one place that tells a plan from a real
// run (the plan says which), so that the steps return ops and leave the
// waits to it.
type executor struct {
	plan *provider.Plan
	// maxUnavailable is a worker pool's max_unavailable (workersByPool).
	maxUnavailable func(pool string) int
	// healthy is the barrier: Talos's health of the control planes,
	// counting those still leaving (waiter.controlPlanesHealthy).
	healthy func(ctx context.Context, gone leaving) error
	// safeguard takes the run's backup before its first risky change
	// (once per run; backupfirst.go), what and first naming that change.
	safeguard func(ctx context.Context, what, first string) error
}

// executor is the run's executor, on what the run knows now.
func (r *run) executor() executor {
	return executor{
		plan: r.plan,
		maxUnavailable: func(pool string) int {
			p, _, _ := r.cfg.PoolOf(pool)
			return p.MaxUnavailable()
		},
		healthy:   func(ctx context.Context, gone leaving) error { return r.waiter().controlPlanesHealthy(ctx, gone) },
		safeguard: r.backupFirst,
	}
}

// real reports a run that changes things (not a plan).
func (e executor) real() bool { return !e.plan.DryRun }

// do carries out one action.
func (e executor) do(ctx context.Context, a action) error {
	var err error
	switch {
	case a.change != nil:
		err = e.plan.Do(ctx, *a.change, a.fn)
	case a.fn != nil:
		err = a.fn(ctx)
	}
	if err != nil || !e.real() || a.then == nil {
		return err
	}
	return a.then(ctx)
}

// op is everything one node goes through in one rollout, decided before
// anything runs (Omni's machineset operations; kops's tasks).
type op struct {
	host         string
	controlPlane bool
	// pool is the node's pool (workersByPool groups workers by it).
	pool    string
	actions []action
	// settled, if not nil, says after the actions ran whether the change
	// disturbed the node so that the barrier must follow (an apply that
	// rebooted it); nil always takes the barrier.
	settled func() bool
}

// order is how a rollout takes its ops.
type order int

const (
	// workersTogether: control planes one at a time, then the workers in
	// one pass (each action of every worker concurrently, in lockstep, so
	// the plan reads drains, then resets, then deletes).
	workersTogether order = iota
	// workersOneByOne: control planes, then workers, one at a time (a
	// restart takes the node away, I-R11); each worker's own actions wait
	// for it.
	workersOneByOne
	// workersByPool: control planes one at a time, then the workers pool by
	// pool, each pool's max_unavailable at a time (an upgrade drains and
	// reboots them); a failed batch stops the rollout before the next.
	workersByPool
	// inOrder: every op one at a time, as listed, whatever its role (a
	// Kubernetes upgrade takes one component over every node, then the
	// next); each op's actions wait for it.
	inOrder
)

// barrier says where Talos's health check of the control planes
// (controlPlanesHealthy, no Kubernetes fallback: I-R5, I-S11) stands in a
// rollout.
type barrier struct {
	// before checks the cluster before the first node is touched (I-R6: a
	// resumed rollout re-establishes the barrier first).
	before bool
	// between checks after each control plane but the last (an op whose
	// settled says it was not disturbed takes none).
	between bool
	// afterLast also checks after the last control plane (scale-down does
	// not: I-S11).
	afterLast bool
	// leaving are the control planes a scale-down removes, still etcd
	// members until they left: the check counts them (KCP's excludeFor,
	// the other way round).
	leaving leaving
}

// policy is how one kind of change is carried out over its ops: the one
// value a rollout chooses.
type policy struct {
	// what names the change in barrier errors ("removing control plane").
	what    string
	order   order
	barrier barrier
	// prepare, if not nil, runs before anything, in a real run only (the
	// installers registered with the Image Factory).
	prepare func(ctx context.Context) error
	// after, if not nil, runs once every op is done, in a real run only:
	// the view refreshed with what the rollout changed.
	after func(ctx context.Context) error
	// guard says which ops are risky enough that the run's backup is
	// taken before the first of them.
	guard guard
}

// guard is which ops of a rollout the backup before a risky change
// (backup.recipients set, no --no-backup) must precede.
type guard int

const (
	// guardNone: no backup first (the ops touch no control plane's etcd).
	guardNone guard = iota
	// guardControlPlanes: before the first control plane's op (a change
	// of etcd membership, a control plane's reboot or upgrade).
	guardControlPlanes
	// guardAll: before the first op (a Kubernetes upgrade).
	guardAll
)

// restarting guards the control planes when they restart.
func restarting(restartingCP bool) guard {
	if restartingCP {
		return guardControlPlanes
	}
	return guardNone
}

// first is the first op g guards, if any.
func (g guard) first(ops []op) (op, bool) {
	for _, o := range ops {
		if g == guardAll || g == guardControlPlanes && o.controlPlane {
			return o, true
		}
	}
	return op{}, false
}

// execute applies ops as p says: control planes one at a time, each
// followed (p.barrier) by Talos's health check with no Kubernetes fallback
// (I-R5, I-S11), then the workers (p.order). The first control plane that
// leaves the cluster unhealthy stops the rollout before any other node is
// touched. A dry run records every action in order, touches nothing and
// waits for nothing. With no ops, only after runs.
func (e executor) execute(ctx context.Context, p policy, ops []op) error {
	if o, ok := p.guard.first(ops); ok && e.safeguard != nil {
		if err := e.safeguard(ctx, p.what, o.host); err != nil {
			return err
		}
	}
	if len(ops) > 0 && e.real() {
		if err := e.begin(ctx, p, ops[0].host); err != nil {
			return err
		}
	}
	cps, workers := byRole(ops)
	if p.order == inOrder {
		cps, workers = nil, ops
	}
	if err := e.controlPlanes(ctx, p, cps); err != nil {
		return err
	}
	for _, batch := range e.workerBatches(p.order, workers) {
		if err := e.workersInOnePass(ctx, batch); err != nil {
			return err
		}
	}
	if !e.real() || p.after == nil {
		return nil
	}
	return p.after(ctx)
}

// controlPlanes runs the control planes' ops one at a time, each followed
// by the barrier p asks for (a real run only).
func (e executor) controlPlanes(ctx context.Context, p policy, cps []op) error {
	for i, o := range cps {
		if err := e.doAll(ctx, o); err != nil {
			return err
		}
		if !e.real() || !p.barrier.follows(o, i == len(cps)-1) {
			continue
		}
		if err := e.healthy(ctx, p.barrier.leaving); err != nil {
			return fmt.Errorf("cluster unhealthy after %s %s; stopping the rollout: %w", p.what, o.host, err)
		}
	}
	return nil
}

// follows reports whether the barrier follows control plane o (last: the
// rollout's last).
func (b barrier) follows(o op, last bool) bool {
	return b.between && (!last || b.afterLast) && (o.settled == nil || o.settled())
}

// begin prepares a real rollout and checks the cluster before first is
// touched, as p says.
func (e executor) begin(ctx context.Context, p policy, first string) error {
	if p.prepare != nil {
		if err := p.prepare(ctx); err != nil {
			return err
		}
	}
	if !p.barrier.before {
		return nil
	}
	if err := e.healthy(ctx, p.barrier.leaving); err != nil {
		return fmt.Errorf("cluster unhealthy before touching %s; aborting rollout: %w", first, err)
	}
	return nil
}

// workerBatches are the worker ops in the groups the order takes them in.
func (e executor) workerBatches(ord order, workers []op) [][]op {
	size := func(op) int { return len(workers) }
	switch ord {
	case workersOneByOne, inOrder:
		size = func(op) int { return 1 }
	case workersByPool:
		size = func(o op) int { return e.maxUnavailable(o.pool) }
	case workersTogether:
	}
	var out [][]op
	for i := 0; i < len(workers); {
		n := max(size(workers[i]), 1)
		j := i + 1
		for j < len(workers) && j-i < n && (ord != workersByPool || workers[j].pool == workers[i].pool) {
			j++
		}
		out = append(out, workers[i:j])
		i = j
	}
	return out
}

// byRole splits ops into the control planes' and the workers', each in
// order.
func byRole(ops []op) (cps, workers []op) {
	for _, o := range ops {
		if o.controlPlane {
			cps = append(cps, o)
		} else {
			workers = append(workers, o)
		}
	}
	return cps, workers
}

// doAll carries out one node's actions in order; the first failure stops
// them.
func (e executor) doAll(ctx context.Context, o op) error {
	for _, a := range o.actions {
		if err := e.do(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// workersInOnePass runs the workers' ops together: action k of every
// worker still going, then action k+1. A worker whose action failed does
// no more; the others finish.
func (e executor) workersInOnePass(ctx context.Context, workers []op) error {
	if len(workers) == 1 {
		return e.doAll(ctx, workers[0])
	}
	failed := make([]error, len(workers))
	for k := 0; ; k++ {
		var idx []int
		for i, o := range workers {
			if failed[i] == nil && k < len(o.actions) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return errors.Join(failed...)
		}
		errs := provider.FanOut(ctx, len(idx), func(ctx context.Context, j int) error {
			return e.do(ctx, workers[idx[j]].actions[k])
		})
		for j, err := range errs {
			if err != nil {
				failed[idx[j]] = err
			}
		}
	}
}
