package talosc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

const (
	actionPlan     = phase.ActionPlan
	actionConverge = phase.ActionConverge
	actionStatus   = phase.ActionStatus
	actionCheck    = phase.ActionCheck
	actionDestroy  = phase.ActionDestroy
)

// RunOptions configures plan and converge.
type RunOptions struct {
	Globals *Globals
	Action  string
	DryRun  bool
	Yes     bool
	Reboot  bool
	// NoBackup skips converge's backup before a risky change.
	NoBackup bool
	Output   string
	// Detailed is plan's --detailed-exitcode.
	Detailed bool
	// Out is plan's --out: the file the plan is saved to.
	Out string
	// PlanFile is converge's --plan: the saved plan to apply.
	PlanFile string
}

func newRunCommand(g *Globals, action string, runF func(context.Context, *RunOptions) error) *cobra.Command {
	o := &RunOptions{Globals: g, Action: action}
	cmd := &cobra.Command{
		Use:  action,
		Args: cobra.NoArgs,
		RunE: outputRunE(o, &o.Output, func() {
			if o.DryRun {
				o.Action = actionPlan
			}
		}, runF, o.Run),
	}
	f := cmd.Flags()
	f.BoolVar(&o.Reboot, "reboot", false, "restart nodes with pending sizing or NIC changes, one at a time, control planes first")
	f.BoolVar(&o.NoBackup, "no-backup", false, "do not take the verified backup (cluster.yaml's backup section) before the first change to etcd membership, a control plane's reboot or upgrade, or a Kubernetes upgrade")
	f.StringVarP(&o.Output, "output", "o", "text", "also print on stdout the plan document (plan) or the final state document (converge): text (none), json or yaml")
	if action == actionPlan {
		f.BoolVar(&o.Detailed, "detailed-exitcode", false, "exit 0 when there is nothing to do, 3 when changes are pending, 1 on an error or a plan that could not look everywhere")
		f.StringVar(&o.Out, "out", "", "save the plan (JSON, no secret values) to this file, for \"converge --plan\"")
		cmd.Short = "Show what converge would change, changing nothing"
		cmd.Long = "plan is exactly converge in dry-run: every phase and plugin reports what it would\ncreate, update or delete, and what each action disturbs (a live apply, a reboot,\nan etcd membership change ...); nothing is changed. -o json prints the plan as a\ndocument (kubectl talosc schema plan); --out saves it for converge --plan.\n\n" + cli.ExitCodesHelp
		cmd.Example = "  # What would change in the cluster in ./prod?\n  kubectl talosc plan -C prod\n  # Review a plan, then apply exactly it\n  kubectl talosc plan -C prod --out prod.plan && kubectl talosc converge -C prod --plan prod.plan"
		return cmd
	}
	cmd.Aliases = []string{"sync", "apply"}
	cmd.Short = "Make the cluster match cluster.yaml"
	cmd.Long = "converge runs the phases (tc-nodes validate | tc-image | tc-net | tc-nodes) joined\nby pipes, then every configured plugin, so that the cluster matches cluster.yaml.\n\n" + cli.ExitCodesHelp
	cmd.Example = "  # Build or update the cluster in ./prod\n  kubectl talosc converge -C prod"
	f.BoolVar(&o.DryRun, "dry-run", false, "only plan (same as \"kubectl talosc plan\")")
	f.BoolVar(&o.Yes, "yes", false, "do not ask before deleting anything")
	f.StringVar(&o.PlanFile, "plan", "", "apply exactly this saved plan (plan --out); refused, changing nothing, when the cluster directory or the cluster changed since")
	return cmd
}

// Run validates everything, runs the phases, then the plugins.
func (o *RunOptions) Run(ctx context.Context) error {
	if o.PlanFile != "" && o.Yes {
		return cli.Usagef("--plan and --yes: a saved plan confirms exactly its own removals; drop --yes")
	}
	if err := refuseClusterFile(o.Globals.Dir, "--out", o.Out); err != nil {
		return err
	}
	s, err := o.Globals.open(ctx, loadCredentials)
	if err != nil {
		return err
	}
	dryRun := o.Action == actionPlan
	var saved *planfile.Document
	if o.PlanFile != "" {
		if saved, err = s.checkSavedPlan(ctx, o); err != nil {
			return err
		}
	}
	r, err := s.runOnce(ctx, o, saved)
	if err != nil {
		return err
	}
	changes, incomplete := s.renderPlan(r.doc, dryRun)
	if dryRun {
		err = s.emitPlan(r.doc, o)
	} else {
		err = s.printDocument(r.doc, o.Output)
	}
	if err != nil {
		return err
	}
	res, pluginErr := r.res, r.pluginErr
	if res.code != 0 {
		return &cli.ExitError{Code: res.code, Err: fmt.Errorf("phase %s failed; later phases and plugins did not run", res.failed)}
	}
	if pluginErr != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: pluginErr}
	}
	if saved != nil {
		return s.appliedExactly(*saved, r.doc)
	}
	if !o.Detailed {
		return nil
	}
	return detailedExit(changes, incomplete)
}

// runResult is what one run of the phases and plugins gave.
type runResult struct {
	doc       *state.Document
	res       pipeResult
	pluginErr error
}

// runOnce runs the phases, asking (or, applying a saved plan, checking)
// a confirmation one asks for, then the plugins.
func (s *session) runOnce(ctx context.Context, o *RunOptions, saved *planfile.Document) (runResult, error) {
	dryRun := o.Action == actionPlan
	doc := state.New(s.cfg.Name, o.Action)
	if err := s.validatePlugins(ctx, s.plugins, doc); err != nil {
		return runResult{}, err
	}
	var extra []string
	if o.Reboot {
		extra = append(extra, "--reboot")
	}
	if o.Yes && !dryRun {
		extra = append(extra, "--yes")
	}
	if o.NoBackup {
		extra = append(extra, "--no-backup")
	}
	res, err := s.runPhases(ctx, o.Action, doc, extra...)
	if err != nil {
		return runResult{}, err
	}
	if question, names := confirmation(res); question != "" && !o.Yes && !dryRun {
		// The first phase refused before any mutation: ask (or check
		// that the saved plan removes exactly these), then run again
		// confirming exactly what was asked (a removal that turns up
		// meanwhile is asked again, not taken as confirmed).
		if saved != nil {
			err = confirmedByPlan(*saved, names)
		} else {
			err = confirm(ctx, o.Globals.Streams, question+"\ntype yes to go on: ", "yes")
		}
		if err != nil {
			return runResult{}, err
		}
		if res, err = s.runPhases(ctx, o.Action, doc, append(extra, "--confirmed="+strings.Join(names, ","))...); err != nil {
			return runResult{}, err
		}
	}
	r := runResult{doc: res.doc, res: res}
	if res.code == 0 {
		r.doc, r.pluginErr = s.runActivePlugins(ctx, plugin.HookConverge, r.doc, plugin.CallOptions{DryRun: dryRun, Yes: o.Yes})
	}
	return r, nil
}

// detailedExit is plan --detailed-exitcode's answer: changes pending (3),
// or nothing to do (0) only when every phase and plugin could look; a plan
// that found nothing but could not look everywhere is not "nothing to do".
func detailedExit(changes int, incomplete []string) error {
	switch {
	case changes > 0:
		return &cli.ExitError{Code: cli.ExitChanges, Silent: true}
	case len(incomplete) > 0:
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("no change found, but the plan is incomplete (%s): not reporting \"nothing to do\"", strings.Join(incomplete, ", "))}
	}
	return nil
}

// confirmation is the question a failed phase asked (a scale-down) and
// what a yes confirms; "" if none.
func confirmation(res pipeResult) (string, []string) {
	if res.code == 0 || res.doc == nil {
		return "", nil
	}
	sec, ok, err := res.doc.Section(res.failed)
	if err != nil || !ok || sec.Error == nil {
		return "", nil
	}
	return sec.Error.Confirm, sec.Error.Confirming
}

// validatePlugins runs every installed plugin's validate hook, configured or
// not, before anything can change. A refusal is an invalid configuration.
func (s *session) validatePlugins(ctx context.Context, plugins []plugin.Plugin, doc *state.Document) error {
	var refused, crashed []error
	r := s.runner()
	for _, p := range plugins {
		if !p.Implements(plugin.HookValidate) {
			continue
		}
		_, sec, err := r.Call(ctx, p, plugin.HookValidate, doc, plugin.CallOptions{})
		switch {
		case err == nil && sec.Status != state.StatusFailed:
			continue
		case sec.Error != nil && len(sec.Error.Problems) > 0:
			for _, pr := range sec.Error.Problems {
				refused = append(refused, fmt.Errorf("%s: %s", p.Name, pr))
			}
		default:
			crashed = append(crashed, fmt.Errorf("plugin %s failed during validate: %w", p.Name, err))
		}
	}
	if len(crashed) > 0 {
		return &cli.ExitError{Code: cli.ExitFailure, Err: errors.Join(append(crashed, refused...)...)}
	}
	if len(refused) > 0 {
		return cli.Usage(fmt.Errorf("plugin configuration refused; nothing was changed:\n%w", errors.Join(refused...)))
	}
	return nil
}

// activePlugins asks every plugin whether it is configured. A plugin whose
// configured hook fails is skipped with a warning.
func (s *session) activePlugins(ctx context.Context, plugins []plugin.Plugin, doc *state.Document) []plugin.Plugin {
	var active []plugin.Plugin
	r := s.runner()
	for _, p := range plugins {
		_, sec, err := r.Call(ctx, p, plugin.HookConfigured, doc, plugin.CallOptions{})
		if err != nil {
			s.out.Warn("plugin %s: configured hook failed (%v); skipping it", p.Name, err)
			continue
		}
		var out struct {
			Configured bool `json:"configured"`
		}
		if jsonErr := decodeOutputs(sec, &out); jsonErr != nil {
			s.out.Warn("plugin %s: configured hook: %v; skipping it", p.Name, jsonErr)
			continue
		}
		if out.Configured {
			active = append(active, p)
		}
	}
	return active
}

// runActivePlugins runs hook on every configured plugin, in run order, each
// seeing what the earlier ones recorded. Failures are contained.
func (s *session) runActivePlugins(ctx context.Context, hook string, doc *state.Document, o plugin.CallOptions) (*state.Document, error) {
	active := s.activePlugins(ctx, s.plugins, doc)
	if hook == plugin.HookDestroy {
		active = reversed(active)
	}
	return s.runner().RunAll(ctx, active, hook, doc, o)
}

func reversed[T any](in []T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}
