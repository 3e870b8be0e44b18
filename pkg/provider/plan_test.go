package provider_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

func change(a state.Action, kind, name string) state.Change {
	return state.Change{Action: a, Kind: kind, Name: name}
}

// A dry run records without acting; a failed change is not recorded and
// names itself; concurrent runs of one kind read in name order.
func TestPlan(t *testing.T) {
	t.Parallel()
	var called int
	act := func(context.Context) error { called++; return nil }
	dry := &provider.Plan{DryRun: true}
	if err := dry.Do(t.Context(), change(state.ActionCreate, "k", "a"), act); err != nil || called != 0 || len(dry.Changes()) != 1 {
		t.Errorf("dry run: err %v, fn called %d times, %d changes", err, called, len(dry.Changes()))
	}

	p := &provider.Plan{}
	boom := errors.New("boom")
	err := p.Do(t.Context(), change(state.ActionCreate, "openstack:port", "x"), func(context.Context) error { return boom })
	if !errors.Is(err, boom) || err.Error() != "create openstack:port x: boom" || len(p.Changes()) != 0 {
		t.Errorf("failed change: %v, %d recorded", err, len(p.Changes()))
	}
	for _, c := range []state.Change{
		change(state.ActionCreate, "rule", "z"), change(state.ActionDelete, "rule", "old"),
		change(state.ActionCreate, "port", "w-02"), change(state.ActionCreate, "port", "cp-01"), change(state.ActionCreate, "port", "w-01"),
		change(state.ActionCreate, "server", "b"),
	} {
		if err := p.Do(t.Context(), c, act); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, c := range p.Changes() {
		names = append(names, c.Name)
	}
	if want := []string{"z", "old", "cp-01", "w-01", "w-02", "b"}; !slices.Equal(names, want) {
		t.Errorf("changes %v, want %v", names, want)
	}
}
