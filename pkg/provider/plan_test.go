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

// Pending, Verify and Act in a dry run and a real one: what each records,
// whether it calls its function, what it returns and what it says.
func TestPlanModes(t *testing.T) {
	t.Parallel()
	missing := errors.New("no endpoint")
	failed := errors.New("still listed")
	waiting := change(state.ActionCreate, "server", "w-01")
	tests := []struct {
		name    string
		dry     bool
		run     func(context.Context, *provider.Plan, func(context.Context) error) error
		called  bool
		err     error
		changes int
		notes   []string
	}{
		{"pending, dry: records the changes", true, func(_ context.Context, p *provider.Plan, _ func(context.Context) error) error {
			return p.Pending(missing, waiting, change(state.ActionCreate, "server", "w-02"))
		}, false, nil, 2, nil},
		{"pending, real: the missing fact", false, func(_ context.Context, p *provider.Plan, _ func(context.Context) error) error {
			return p.Pending(missing, waiting)
		}, false, missing, 0, nil},
		{"pending, real, nothing missing", false, func(_ context.Context, p *provider.Plan, _ func(context.Context) error) error {
			return p.Pending(nil, waiting)
		}, false, nil, 0, nil},
		{"verify, dry: nothing to verify", true, func(ctx context.Context, p *provider.Plan, fn func(context.Context) error) error {
			return p.Verify(ctx, fn)
		}, false, nil, 0, nil},
		{"verify, real: fn's error", false, func(ctx context.Context, p *provider.Plan, fn func(context.Context) error) error {
			return p.Verify(ctx, fn)
		}, true, failed, 0, nil},
		{"act, dry: says what it would do", true, func(ctx context.Context, p *provider.Plan, fn func(context.Context) error) error {
			return p.Act(ctx, "recover the kubeconfig", fn)
		}, false, nil, 0, []string{"would recover the kubeconfig"}},
		{"act, real: fn's error, unwrapped", false, func(ctx context.Context, p *provider.Plan, fn func(context.Context) error) error {
			return p.Act(ctx, "recover the kubeconfig", fn)
		}, true, failed, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var notes []string
			p := &provider.Plan{DryRun: tt.dry, Note: func(msg string) { notes = append(notes, msg) }}
			called := false
			err := tt.run(t.Context(), p, func(context.Context) error { called = true; return failed })
			if err != tt.err || called != tt.called || len(p.Changes()) != tt.changes || !slices.Equal(notes, tt.notes) { //nolint:errorlint // the very error, unwrapped
				t.Errorf("err %v (want %v), fn called %v (want %v), %d changes (want %d), notes %q (want %q)",
					err, tt.err, called, tt.called, len(p.Changes()), tt.changes, notes, tt.notes)
			}
		})
	}
}
