package sections_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// TestValidation: the first phase of a pipe stands on the fact of the
// validation heading it only when the fact is fresh; anything else is
// refused, naming the command to put first, and a refusal of the
// validation is carried on once, silently, with its question.
func TestValidation(t *testing.T) {
	t.Parallel()
	inv := &provider.Inventory{Machines: []provider.Machine{{Hostname: "c-worker-01", ID: "a"}}}
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	nodesPhase := &state.Section{Status: state.StatusSucceeded, Outputs: []byte(`{"machines":[]}`)}
	for _, tc := range []struct {
		name string
		age  time.Duration // of the validation's fact; 0: no fact
		sec  *state.Section
		edit func(*phase.Input)
		inv  *provider.Inventory
		want string // "" when the fact holds
	}{
		{"a fresh validation", time.Minute, nil, nil, inv, ""},
		{"a fresh validation, the inventory unread", time.Minute, nil, nil, nil, ""},
		{"no validation", 0, nil, nil, inv, "stdin carries no validation: put `tc-nodes validate` first: tc-nodes validate | tc-image converge | tc-net converge | tc-nodes converge"},
		{"a nodes phase's section, not a validation", 0, nodesPhase, nil, inv, "stdin carries no validation"},
		{"cluster.yaml edited since", time.Minute, nil, func(in *phase.Input) { in.Config.Name = "d" }, inv, "made for another cluster.yaml or mode"},
		{"a converge's validation in a plan", time.Minute, nil, func(in *phase.Input) { in.DryRun = true }, inv, "validate again: tc-nodes validate --dry-run | tc-image plan"},
		{"yesterday's validation", 24 * time.Hour, nil, nil, inv, "not within 1h0m0s of now"},
		{"machines changed since", time.Minute, nil, nil, &provider.Inventory{}, "the owned machines changed since the validation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &phase.Input{Config: &config.Cluster{Name: "c"}, State: state.New("c", phase.ActionConverge)}
			sec := tc.sec
			if tc.age > 0 {
				fact := sections.NewFact(in, inv, nil)
				fact.At = now.Add(-tc.age)
				sec = &state.Section{Status: state.StatusSucceeded}
				if err := sec.SetOutputs(fact); err != nil {
					t.Fatal(err)
				}
			}
			if sec != nil {
				if err := in.State.Put(phase.Nodes, *sec); err != nil {
					t.Fatal(err)
				}
			}
			if tc.edit != nil {
				tc.edit(in)
			}
			fact, err := sections.Validation(in, tc.inv, now)
			if tc.want == "" {
				if err != nil || fact == nil {
					t.Fatalf("fact %v, err %v", fact, err)
				}
				return
			}
			if _, usage := errors.AsType[*cli.UsageError](err); !usage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestValidationCarriesARefusal: the first phase fails with the
// validation's own error, silent (the validation printed it), and a
// scale-down's question stays a question the front door can ask.
func TestValidationCarriesARefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     state.Error
		confirm bool
	}{
		{"a refusal", state.Error{Message: "controlplane.flavor changed"}, false},
		{"a question", state.Error{Message: "scale down", Confirm: "scale down will remove 1 node(s): c-worker-02", Confirming: []string{"c-worker-02"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &phase.Input{Config: &config.Cluster{Name: "c"}, State: state.New("c", phase.ActionConverge)}
			e := tc.err
			if err := in.State.Put(phase.Nodes, state.Section{Status: state.StatusFailed, Error: &e}); err != nil {
				t.Fatal(err)
			}
			_, err := sections.Validation(in, nil, time.Now())
			ee, ok := errors.AsType[*cli.ExitError](err)
			if !ok || !ee.Silent || ee.Code != cli.ExitFailure {
				t.Fatalf("err = %#v, want a silent exit 1", err)
			}
			ce, asks := errors.AsType[*phase.ConfirmError](err)
			switch {
			case asks != tc.confirm:
				t.Errorf("err = %v, question %v, want %v", err, asks, tc.confirm)
			case asks && (ce.Prompt != e.Confirm || len(ce.Names) != 1):
				t.Errorf("question %+v, want %q", ce, e.Confirm)
			case !asks && err.Error() != e.Message:
				t.Errorf("err = %q, want %q", err, e.Message)
			}
		})
	}
}
