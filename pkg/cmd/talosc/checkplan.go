package talosc

import (
	"context"
	"errors"
	"time"

	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// sectionPlan is the check report's section of what converge would do.
const sectionPlan = "plan"

// planReport is what check says of the plan: ok only when nothing is
// pending and the plan could look everywhere.
type planReport struct {
	OK         bool     `json:"ok"`
	Pending    int      `json:"pending"`
	Complete   bool     `json:"complete"`
	Incomplete []string `json:"incomplete,omitempty"`
	// Disruption is the plan's disruption summary, "" when nothing
	// pending disturbs anything.
	Disruption string            `json:"disruption,omitempty"`
	Actions    []planfile.Action `json:"actions"`
}

// checkPlan adds to doc what converge would do, planned as plan does (a
// dry run: nothing is changed), when the provider credentials load:
// cluster.yaml edits not rolled out yet, and whether each would reboot a
// node, on the Talos each runs. Without credentials check plans nothing
// and says so (check needs none).
func (s *session) checkPlan(ctx context.Context, doc *state.Document) {
	if _, err := s.load(loadCredentials); err != nil {
		s.out.Info("pending changes not looked for (that needs the provider credentials, check does not): %v", err)
		return
	}
	sec := state.Section{Status: state.StatusSucceeded, Producer: "kubectl-talosc"}
	rep, err := s.pending(ctx)
	if err == nil {
		err = sec.SetOutputs(rep)
	}
	if err != nil {
		sec.Fail(err)
	}
	if err := doc.Put(sectionPlan, sec); err != nil {
		s.out.Warn("%v", err)
	}
}

// pending plans and reports what the plan holds.
func (s *session) pending(ctx context.Context) (planReport, error) {
	r, err := s.runOnce(ctx, &RunOptions{Globals: s.g, Action: actionPlan, Output: "text"}, nil)
	if err != nil {
		return planReport{}, err
	}
	if r.res.code != 0 || r.pluginErr != nil {
		return planReport{}, errors.New(failure(r))
	}
	d, err := planfile.FromState(r.doc, nil, time.Now())
	if err != nil {
		return planReport{}, err
	}
	changes := map[string][]state.Change{}
	for _, name := range r.doc.Names() {
		if sec, _, err := r.doc.Section(name); err == nil {
			changes[name] = sec.Plan
		}
	}
	for i := range d.Actions {
		d.Actions[i].Diff = "" // plan shows them; check says what and how disruptive
	}
	rep := planReport{Pending: len(d.Actions), Complete: d.Complete, Incomplete: d.Incomplete, Disruption: ui.DisruptionSummary(changes), Actions: d.Actions}
	rep.OK = rep.Pending == 0 && rep.Complete
	return rep, nil
}
