package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/talosc/talosc/pkg/state"
)

// Plan records the changes of one phase run, and is the one place that
// knows whether the run is dry. Providers and phases mutate only through
// it, so plan is converge with the mutations left out:
//   - Do makes a change and records it (a dry run only records it);
//   - Pending records changes that wait on a fact only a real run has
//     (a real run without that fact fails);
//   - Verify waits for or checks what the changes made (a dry run made
//     none: nothing to verify);
//   - Act does what the plan does not list as a change (a dry run only
//     says what it would do).
//
// Plan is safe for concurrent use (machines are created concurrently).
type Plan struct {
	// DryRun records changes without making them.
	DryRun bool
	// Progress, when set, is told about each change as it starts (a real
	// run) or is planned (a dry run).
	Progress func(c state.Change)
	// Note, when set, is told what a dry run would do in place of each
	// Act ("would recover the kubeconfig from ...").
	Note func(msg string)

	mu      sync.Mutex
	changes []state.Change
}

// Do makes change c by calling fn, unless the plan is a dry run, and
// records it. A failed fn records nothing and returns its error wrapped with
// the change ("create openstack:network mycluster-net: ...").
func (p *Plan) Do(ctx context.Context, c state.Change, fn func(context.Context) error) error {
	if p.Progress != nil {
		p.Progress(c)
	}
	if !p.DryRun {
		if err := fn(ctx); err != nil {
			return fmt.Errorf("%s %s %s: %w", c.Action, c.Kind, c.Name, err)
		}
	}
	p.Record(c)
	return nil
}

// Pending stands for changes that wait on a fact only a real run has by
// this point (the API endpoint the network phase allocates, the boot
// image the image phase uploads, an address a new machine gets). A dry
// run, which made none of those, records the changes and returns nil; a
// real run records nothing and returns err, the fact's absence (nil when
// no change waits on it).
func (p *Plan) Pending(err error, changes ...state.Change) error {
	if !p.DryRun {
		return err
	}
	for _, c := range changes {
		p.Record(c)
	}
	return nil
}

// Verify calls fn, which waits for the changes made through Do to take
// effect or checks what they made (servers booted or gone, a bridge on
// every node, what a teardown left), and returns its error. A dry run
// made no change, so there is nothing to verify: Verify returns nil
// without calling fn.
func (p *Plan) Verify(ctx context.Context, fn func(context.Context) error) error {
	if p.DryRun {
		return nil
	}
	return fn(ctx)
}

// Act calls fn, an action the plan does not list as a change (a
// kubeconfig recovered, a stale one removed), and returns its error
// unwrapped. A dry run does not call fn: it tells Note "would " + what
// and returns nil.
func (p *Plan) Act(ctx context.Context, what string, fn func(context.Context) error) error {
	if !p.DryRun {
		return fn(ctx)
	}
	if p.Note != nil {
		p.Note("would " + what)
	}
	return nil
}

// Record records a change made (or, in a dry run, planned) outside Do:
// a file another package wrote, or a step that only a real run can reach.
func (p *Plan) Record(c state.Change) {
	p.mu.Lock()
	p.changes = append(p.changes, c)
	p.mu.Unlock()
}

// Changes returns the recorded changes in the order they completed, except
// that each run of consecutive changes of one action and kind (made
// concurrently, finishing in any order) is sorted by name, so the same
// run always reads the same.
func (p *Plan) Changes() []state.Change {
	p.mu.Lock()
	out := slices.Clone(p.changes)
	p.mu.Unlock()
	for start := 0; start < len(out); {
		end := start + 1
		for end < len(out) && out[end].Kind == out[start].Kind && out[end].Action == out[start].Action {
			end++
		}
		slices.SortStableFunc(out[start:end], func(a, b state.Change) int { return strings.Compare(a.Name, b.Name) })
		start = end
	}
	return out
}
