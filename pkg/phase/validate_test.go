package phase_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/state"
)

// validatingPhase is a fakePhase that serves the whole-run validation.
type validatingPhase struct {
	*fakePhase
	err error
}

func (v validatingPhase) Validate(_ context.Context, in *phase.Input) (*phase.Validated, error) {
	if v.err != nil {
		return nil, v.err
	}
	return &phase.Validated{Fingerprint: map[bool]string{true: "plan", false: "converge"}[in.DryRun], At: time.Now()}, nil
}

// TestValidateAction: only a phase that serves the validation has the
// "validate" action; it heads the pipe, writing its fact (or its
// refusal, a scale-down's question included) as its section, quietly:
// the phases it feeds print the warnings and headers.
func TestValidateAction(t *testing.T) {
	t.Parallel()
	if res := run(t, &fakePhase{name: "image"}, "", nil, "validate"); res.code != cli.ExitUsage || !strings.Contains(res.stderr, `unknown command "validate"`) {
		t.Errorf("a phase without the validation: exit %d, stderr %q", res.code, res.stderr)
	}

	res := runEnv(t, validatingPhase{fakePhase: &fakePhase{name: "nodes"}}, nil, "", nil, "validate", "--dry-run")
	if res.code != cli.ExitOK || strings.Contains(res.stderr, "==") {
		t.Fatalf("validate: exit %d, stderr %q", res.code, res.stderr)
	}
	sec := sectionOf(t, res.doc, "nodes")
	fact, _, err := state.Outputs[phase.Validated](res.doc, "nodes")
	if sec.Status != state.StatusSucceeded || err != nil || fact.Fingerprint != "plan" {
		t.Errorf("section %+v, fact %+v (%v): want the dry run's fact", sec, fact, err)
	}

	ask := &phase.ConfirmError{Prompt: "scale down will remove 1 node(s): demo-worker-02", Names: []string{"demo-worker-02"}}
	res = runEnv(t, validatingPhase{fakePhase: &fakePhase{name: "nodes"}, err: ask}, nil, "", nil, "validate")
	sec = sectionOf(t, res.doc, "nodes")
	if res.code != cli.ExitFailure || sec.Status != state.StatusFailed || sec.Error == nil || sec.Error.Confirm != ask.Prompt {
		t.Errorf("a refused validation: exit %d, section %+v", res.code, sec)
	}
}

// TestValidateArgs: the validation heading a pipe validates what the
// phases will do: a plan's as a dry run, and with exactly the
// confirmations the phases were given (not --reboot, which it has not).
func TestValidateArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action string
		flags  []string
		want   string
	}{
		{phase.ActionPlan, []string{"--reboot"}, "validate --dry-run"},
		{phase.ActionConverge, nil, "validate"},
		{phase.ActionConverge, []string{"--reboot", "--yes"}, "validate --yes"},
		{phase.ActionConverge, []string{"--confirmed=demo-worker-02"}, "validate --confirmed=demo-worker-02"},
	} {
		if got := strings.Join(phase.ValidateArgs(tc.action, tc.flags), " "); got != tc.want {
			t.Errorf("ValidateArgs(%s, %q) = %q, want %q", tc.action, tc.flags, got, tc.want)
		}
	}
}
