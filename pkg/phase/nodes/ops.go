package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// action is one change to one node: recorded in a dry run, made through
// the plan in a real run. fn may wait for the node (a reboot settled, a
// reset finished) and may decide that a failure is safe to go on from (a
// drain of a NotReady node), returning nil after a warning.
//
// A provider call records its own change through the plan (in a dry run
// too): such an action sets provider, and then for the wait that follows
// it in a real run, instead of change and fn.
type action struct {
	change   state.Change
	fn       func(ctx context.Context) error
	provider func(ctx context.Context) error
	then     func(ctx context.Context) error
}

// do carries out one action.
func (r *run) do(ctx context.Context, a action) error {
	if a.provider == nil {
		return r.plan.Do(ctx, a.change, a.fn)
	}
	if err := a.provider(ctx); err != nil || r.in.DryRun || a.then == nil {
		return err
	}
	return a.then(ctx)
}

// op is everything one node goes through in one rollout, decided before
// anything runs (Omni's machineset operations; kops's tasks).
type op struct {
	host         string
	controlPlane bool
	// pool is the node's pool (a batched rollout groups workers by it).
	pool    string
	actions []action
	// settled, if not nil, says after the actions ran whether the change
	// disturbed the node so that the barrier must follow (an apply that
	// rebooted it); nil always takes the barrier.
	settled func() bool
}

// rollout is how one kind of change is carried out over its ops.
type rollout struct {
	// what names the change in barrier errors ("removing control plane").
	what string
	// healthBefore checks the cluster before the first node is touched
	// (I-R6: a resumed rollout re-establishes the barrier first).
	healthBefore bool
	// healthAfterLast also checks after the last control plane (scale-down
	// does not: I-S11).
	healthAfterLast bool
	// serialWorkers takes workers one at a time too (a restart takes the
	// node away, I-R11); each worker's own actions wait for it.
	serialWorkers bool
	// batched takes workers pool by pool, each pool's max_unavailable at
	// a time (an upgrade drains and reboots them); a failed batch stops
	// the rollout before the next.
	batched bool
}

// execute applies ops: control planes one at a time, each followed by
// Talos's health check with no Kubernetes fallback (I-R5, I-S11), then the
// workers in one pass (each action of every worker concurrently, in
// lockstep, so the plan reads drains, then resets, then deletes). The
// first control plane that leaves the cluster unhealthy stops the
// rollout before any other node is touched. A dry run records every
// action in order and touches nothing.
func (r *run) execute(ctx context.Context, ro rollout, ops []op) error {
	cps, workers := byRole(ops)
	if first := slices.Concat(cps, workers); len(first) > 0 && ro.healthBefore && !r.in.DryRun {
		if err := r.controlPlanesHealthy(ctx); err != nil {
			return fmt.Errorf("cluster unhealthy before touching %s; aborting rollout: %w", first[0].host, err)
		}
	}
	for i, o := range cps {
		if err := r.doAll(ctx, o); err != nil {
			return err
		}
		if r.in.DryRun || (i == len(cps)-1 && !ro.healthAfterLast) || (o.settled != nil && !o.settled()) {
			continue
		}
		if err := r.controlPlanesHealthy(ctx); err != nil {
			return fmt.Errorf("cluster unhealthy after %s %s; stopping the rollout: %w", ro.what, o.host, err)
		}
	}
	for _, batch := range r.workerBatches(ro, workers) {
		if err := r.workersInOnePass(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

// workerBatches are the worker ops in the groups a rollout takes them in,
// in order: all at once, one at a time (serialWorkers), or per pool its
// max_unavailable at a time (batched).
func (r *run) workerBatches(ro rollout, workers []op) [][]op {
	size := func(op) int { return len(workers) }
	switch {
	case ro.serialWorkers:
		size = func(op) int { return 1 }
	case ro.batched:
		size = func(o op) int {
			p, _, _ := r.cfg.PoolOf(o.pool)
			return p.MaxUnavailable()
		}
	}
	var out [][]op
	for i := 0; i < len(workers); {
		n := max(size(workers[i]), 1)
		j := i + 1
		for j < len(workers) && j-i < n && (!ro.batched || workers[j].pool == workers[i].pool) {
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
func (r *run) doAll(ctx context.Context, o op) error {
	for _, a := range o.actions {
		if err := r.do(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// workersInOnePass runs the workers' ops together: action k of every
// worker still going, then action k+1. A worker whose action failed does
// no more; the others finish.
func (r *run) workersInOnePass(ctx context.Context, workers []op) error {
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
			return r.do(ctx, workers[idx[j]].actions[k])
		})
		for j, err := range errs {
			if err != nil {
				failed[idx[j]] = err
			}
		}
	}
}
