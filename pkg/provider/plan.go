package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/talosc/talosc/pkg/state"
)

// Plan records the changes of one phase run. Providers and phases mutate
// only through Do: in a dry run Do records the change and does nothing, so
// plan is converge with the mutations left out. Plan is safe for
// concurrent use (machines are created concurrently).
type Plan struct {
	// DryRun records changes without making them.
	DryRun bool
	// Progress, when set, is told about each change as it starts (a real
	// run) or is planned (a dry run).
	Progress func(c state.Change)

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
