package talosc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/state"
)

// planDocument is the plan document of a planned state document, with
// the fingerprint of the files it was made from.
func (s *session) planDocument(doc *state.Document) (planfile.Document, error) {
	files, err := planfile.HashFiles(s.dir, s.cfg.Files, config.TalosSecretsFile)
	if err != nil {
		return planfile.Document{}, err
	}
	return planfile.FromState(doc, files, time.Now())
}

// emitPlan prints the plan document for -o json|yaml and saves it for
// --out. A plan that could not look everywhere is saved too (it says
// so), but converge --plan refuses it.
func (s *session) emitPlan(doc *state.Document, o *RunOptions) error {
	if o.Output == "text" && o.Out == "" {
		return nil
	}
	d, err := s.planDocument(doc)
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := planfile.Write(o.Out, d); err != nil {
			return err
		}
		s.out.Info("saved the plan to %s: apply exactly it with kubectl talosc converge -C %s --plan %s", o.Out, s.g.Dir, o.Out)
	}
	_, err = writeStructured(s.g.Streams.Out, o.Output, d)
	return err
}

// checkSavedPlan reads the saved plan and makes a fresh one (a dry run,
// changing nothing): a plan made from other files, of a cluster that
// changed, or whose actions differ from today's is refused before any
// mutation.
func (s *session) checkSavedPlan(ctx context.Context, o *RunOptions) (*planfile.Document, error) {
	saved, err := planfile.Read(o.PlanFile)
	if err != nil {
		return nil, cli.Usage(err)
	}
	s.out.Info("checking that the saved plan %s (made %s) still holds: planning again", o.PlanFile, saved.CreatedAt.Format(time.RFC3339))
	fresh := *o
	fresh.Action, fresh.PlanFile = actionPlan, ""
	r, err := s.runOnce(ctx, &fresh, nil)
	if err != nil {
		return nil, err
	}
	if r.res.code != 0 || r.pluginErr != nil {
		return nil, &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("planning again to check the saved plan failed (%s); nothing was changed", failure(r))}
	}
	now, err := s.planDocument(r.doc)
	if err != nil {
		return nil, err
	}
	if why := planfile.Stale(saved, now); len(why) > 0 {
		return nil, &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("the saved plan %s no longer holds; nothing was changed:\n  %s\nmake a new plan (kubectl talosc plan --out %s) and review it", o.PlanFile, strings.Join(why, "\n  "), o.PlanFile)}
	}
	s.out.Info("the saved plan holds: %d action(s), applying them", len(saved.Actions))
	return &saved, nil
}

// failure names what failed in a run.
func failure(r runResult) string {
	if r.res.code != 0 {
		return "phase " + r.res.failed + " failed"
	}
	return r.pluginErr.Error()
}

// confirmedByPlan accepts a phase's confirmation question only when the
// saved plan removes exactly the nodes it asks about (its deletions that
// remove a node or its etcd member; a boot ISO deleted is no removal).
func confirmedByPlan(saved planfile.Document, names []string) error {
	var removed []string
	for _, a := range saved.Actions {
		removal := a.Disruption == state.DisruptionRemove || a.Disruption == state.DisruptionEtcdMembership
		if a.Action == state.ActionDelete && removal && a.Node != "" && !slices.Contains(removed, a.Node) {
			removed = append(removed, a.Node)
		}
	}
	slices.Sort(removed)
	asked := slices.Sorted(slices.Values(names))
	if !slices.Equal(removed, asked) {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("converge asks to remove %s, the saved plan removes %s; nothing was changed", orNone(asked), orNone(removed))}
	}
	return nil
}

// appliedExactly compares what the converge did with the saved plan. The
// fresh plan matched it moments before, so a difference means the cluster
// changed during the run (or an answer was lost and the step is
// re-done): said, and exit 1, so the operator looks.
func (s *session) appliedExactly(saved planfile.Document, doc *state.Document) error {
	done, err := planfile.FromState(doc, nil, time.Now())
	if err != nil {
		return err
	}
	if why := planfile.Performed(saved, done); len(why) > 0 {
		return &cli.ExitError{Code: cli.ExitFailure, Err: errors.New("converge did not do exactly the saved plan:\n  " + strings.Join(why, "\n  "))}
	}
	s.out.Info("applied the saved plan exactly: %d action(s)", len(saved.Actions))
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
