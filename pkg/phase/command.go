package phase

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
	"github.com/talosc/talosc/pkg/version"
)

// Options configures one run of a phase binary. Fields above the blank line
// come from flags; the rest are seams tests replace.
type Options struct {
	Dir    string
	Yes    bool
	DryRun bool
	// Reboot restarts nodes with pending sizing or NIC changes (plan and converge).
	Reboot bool
	// NoBackup skips the backup before a risky change (plan and converge).
	NoBackup bool
	// Quiet prints nothing but errors (backup).
	Quiet bool
	// Confirmed are the removals a human confirmed (converge, validate).
	Confirmed []string
	// ExpiryWarning is how long before a certificate expires check warns.
	ExpiryWarning time.Duration

	Streams cli.Streams
	// Load reads the configuration; nil means config.Load.
	Load func(dir string, o config.LoadOptions) (*config.Cluster, error)
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Connect are the providers the binary links (NewCommand's clouds);
	// a provider missing from it is not available in this build.
	Connect provider.Connectors
}

// NewCommand returns the root command of the phase binary for p, which
// reaches the clouds through clouds (the binary chooses the providers it
// links). runF, when not nil, replaces the real run (tests capture the
// options with it). A p that is a Validator (tc-nodes) also serves the
// whole-run validation as its "validate" action, the head of the pipe.
func NewCommand(s cli.Streams, p Phase, clouds provider.Connectors, runF func(context.Context, *Options, string) error) *cobra.Command {
	o := &Options{Streams: s, Load: config.Load, LookupEnv: os.LookupEnv, Connect: clouds}
	binary := plugin.Prefix + p.Name()
	root := &cobra.Command{
		Use:   binary + " ACTION [flags] < state.json > state.json",
		Short: fmt.Sprintf("Run the %s phase of a talosc run", p.Name()),
		Long: fmt.Sprintf(`%s runs the %s phase of a talosc run as a Unix filter: it reads
cluster.yaml (in -C DIR) and the JSON state document of earlier phases on stdin
(when stdin is not a terminal), and writes the state document with its own
%q section on stdout. Progress and plans go to stderr.

`, binary, p.Name(), p.Name()) + cli.ExitCodesHelp,
		Example: fmt.Sprintf(`  # Plan the whole cluster by hand, phase by phase: the validation heads the pipe
  %s

  # Converge it by hand
  %s

  # Show what the %s phase owns
  %s status -C mycluster`, HandPipe(true), HandPipe(false), p.Name(), binary),
		Version:       version.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&o.Dir, "dir", "C", ".", "the cluster directory `DIR`, holding cluster.yaml")
	for _, a := range []struct{ name, short string }{
		{ActionPlan, "Plan the phase: report what converge would change, changing nothing"},
		{ActionConverge, "Make what the phase owns match cluster.yaml"},
		{ActionStatus, "Report what the phase owns"},
		{ActionCheck, "Report what needs attention (needs no provider credentials)"},
		{ActionDestroy, "Remove what the phase owns (needs --yes; the front door asks first)"},
		{ActionValidate, "Validate the whole run before its first mutation: the head of the pipe (it changes nothing)"},
		{ActionBackup, "Take a verified, age-encrypted etcd backup into the backup target (cluster.yaml's backup section), then prune by backup.keep"},
	} {
		if !serves(p, a.name) {
			continue
		}
		cmd := &cobra.Command{
			Use:   a.name,
			Short: a.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if runF != nil {
					return runF(cmd.Context(), o, a.name)
				}
				return o.Run(cmd.Context(), p, a.name)
			},
		}
		if a.name == ActionPlan || a.name == ActionConverge {
			cmd.Flags().BoolVar(&o.Reboot, "reboot", false, "restart nodes with pending sizing or NIC changes, one at a time, control planes first")
			cmd.Flags().BoolVar(&o.NoBackup, "no-backup", false, "do not take the backup (cluster.yaml's backup section) before the first change to etcd membership, a control plane's reboot or upgrade, or a Kubernetes upgrade")
		}
		if a.name == ActionCheck {
			cmd.Flags().DurationVar(&o.ExpiryWarning, "expiry-warning", report.DefaultExpiryWarning, "warn when a certificate expires within this `DURATION`")
		}
		if a.name == ActionValidate {
			cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "validate a plan (no confirmation needed)")
		}
		if a.name == ActionConverge || a.name == ActionValidate {
			cmd.Flags().StringSliceVar(&o.Confirmed, "confirmed", nil, "confirm a scale-down of exactly these `NODES` (what the front door passes after asking); any other removal is asked again")
			cmd.Flags().BoolVar(&o.Yes, "yes", false, "confirm a scale-down (a phase in a pipe cannot prompt; without it a removal is refused before anything changes)")
		}
		if a.name == ActionBackup {
			cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print nothing but errors (for cron)")
		}
		if a.name == ActionDestroy {
			cmd.Flags().BoolVar(&o.Yes, "yes", false, "confirm the destruction (a phase in a pipe cannot prompt)")
			cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "report what would be removed, removing nothing")
		}
		root.AddCommand(cmd)
	}
	return root
}

// Run performs action for p and writes the resulting document to stdout. It
// writes a document on every path where it can, so downstream phases see why
// it stopped.
func (o *Options) Run(ctx context.Context, p Phase, action string) error {
	out := ui.New(o.Streams.ErrOut, os.Environ())
	doc, err := readState(o.Streams.In)
	if err != nil {
		return cli.Usage(err)
	}
	dryRun := action == ActionPlan || ((action == ActionDestroy || action == ActionValidate) && o.DryRun)
	if action == ActionDestroy && !o.Yes && !dryRun {
		return cli.Usagef("%s destroy needs --yes (use \"kubectl talosc destroy\" to be asked)", plugin.Prefix+p.Name())
	}
	sec := state.Section{Producer: plugin.Prefix + p.Name() + "/" + version.Version()}
	cfg, err := o.load(ctx, action, out)
	if err != nil {
		return o.loadFailed(doc, p.Name(), action, sec, err)
	}
	quiet := o.announce(out, cfg, p.Name(), action)
	if doc == nil {
		doc = state.New(cfg.Name, action)
	}
	if err := compatible(doc, cfg.Name, p.Name(), action, dryRun); err != nil {
		return cli.Usage(err)
	}
	if blocked := blockedBy(doc, p.Name(), action); blocked != "" {
		sec.Status = state.StatusSkipped
		sec.Messages = []string{fmt.Sprintf("skipped: phase %q did not succeed", blocked)}
		out.Warn("%s: skipped because phase %q did not succeed", p.Name(), blocked)
		return errors.Join(cli.Exit(cli.ExitFailure), o.write(doc, p.Name(), sec))
	}
	env, err := NewEnv(o.LookupEnv, o.Connect)
	if err != nil {
		return cli.Usage(err)
	}
	in := &Input{Config: cfg, State: doc, DryRun: dryRun, Reboot: o.Reboot, NoBackup: o.NoBackup, Quiet: o.Quiet, Yes: o.Yes, Confirmed: o.Confirmed, ExpiryWarning: o.ExpiryWarning, Out: out, Env: env}
	runErr := settle(o.perform(ctx, p, action, in, &sec), in, &sec)
	if !quiet {
		say(out, p.Name(), action, sec)
	}
	return errors.Join(runErr, o.write(doc, p.Name(), sec))
}

// say prints what the phase planned or did and its messages.
func say(out *ui.Printer, name, action string, sec state.Section) {
	if action == ActionPlan || action == ActionConverge || action == ActionDestroy {
		out.Plan(name, sec.Plan)
	}
	for _, m := range sec.Messages {
		out.Info("%s", m)
	}
}

// loadFailed writes the section of a run whose cluster.yaml did not load:
// failed, with the problems listed.
func (o *Options) loadFailed(doc *state.Document, name, action string, sec state.Section, err error) error {
	sec.Fail(err)
	if problems, ok := errors.AsType[config.Problems](err); ok {
		sec.Error.Problems = problems.Lines()
	}
	if doc == nil {
		doc = state.New("", action)
	}
	return errors.Join(cli.Usage(err), o.write(doc, name, sec))
}

// announce prints the configuration's warnings and the phase's header,
// unless the phase only reports progress: under the front door, which
// printed the warnings and renders the whole plan from the final document,
// and in the validate action, which heads a pipe whose phases print them.
// It says whether the phase is quiet.
func (o *Options) announce(out *ui.Printer, cfg *config.Cluster, name, action string) bool {
	_, fromFrontDoor := o.LookupEnv(plugin.EnvPath)
	if fromFrontDoor || action == ActionValidate {
		return true
	}
	for _, w := range append(TestKnobWarnings(o.LookupEnv), cfg.Warnings...) {
		out.Warn("%s", w)
	}
	out.Header("%s %s", name, action)
	return false
}

// settle records runErr in sec: a plan that cannot observe the provider is
// deferred, not failed; a failure keeps a scale-down question for the front
// door to ask. It returns the error the run ends with.
func settle(runErr error, in *Input, sec *state.Section) error {
	if in.DryRun && errors.Is(runErr, provider.ErrNotAvailable) {
		sec.Status = state.StatusDeferred
		sec.Messages = append(sec.Messages, fmt.Sprintf("deferred: the %s provider is not available in this build, so nothing was observed and nothing is planned", in.Config.Provider()))
		return nil
	}
	if runErr != nil && sec.Status == "" {
		sec.Fail(runErr)
		if ce, ok := errors.AsType[*ConfirmError](runErr); ok {
			sec.Error.Confirm, sec.Error.Confirming = ce.Prompt, ce.Names
		}
	}
	return runErr
}

func (o *Options) perform(ctx context.Context, p Phase, action string, in *Input, sec *state.Section) error {
	switch action {
	case ActionPlan, ActionConverge:
		if err := p.Converge(ctx, in, sec); err != nil {
			return err
		}
		setDone(sec, in.DryRun)
	case ActionDestroy:
		if err := p.Destroy(ctx, in, sec); err != nil {
			return err
		}
		setDone(sec, in.DryRun)
	case ActionValidate:
		return validate(ctx, p, in, sec)
	case ActionStatus:
		if err := p.Status(ctx, in, sec); err != nil {
			return err
		}
		sec.Status = state.StatusSucceeded
	case ActionCheck:
		return check(ctx, p, in, sec)
	case ActionBackup:
		return takeBackup(ctx, p, in, sec)
	default:
		return cli.Usagef("unknown action %q", action)
	}
	return nil
}

// validate runs the whole-run validation of a phase that has one and puts
// its fact into sec.
func validate(ctx context.Context, p Phase, in *Input, sec *state.Section) error {
	v, ok := p.(Validator)
	if !ok {
		return cli.Usagef("%s does not validate a run: put %s first", plugin.Prefix+p.Name(), ValidateCommand(in.DryRun))
	}
	fact, err := v.Validate(ctx, in)
	if err != nil {
		return err
	}
	if err := sec.SetOutputs(fact); err != nil {
		return err
	}
	sec.Status = state.StatusSucceeded
	return nil
}

// serves reports whether p has action: validate and backup only a phase
// that implements them.
func serves(p Phase, action string) bool {
	switch action {
	case ActionValidate:
		_, ok := p.(Validator)
		return ok
	case ActionBackup:
		_, ok := p.(Backuper)
		return ok
	}
	return true
}

// takeBackup runs p's backup and puts what it stored into sec.
func takeBackup(ctx context.Context, p Phase, in *Input, sec *state.Section) error {
	b, ok := p.(Backuper)
	if !ok {
		return cli.Usagef("%s takes no backup: run tc-nodes backup", plugin.Prefix+p.Name())
	}
	out, err := b.Backup(ctx, in)
	if out != nil {
		err = errors.Join(err, sec.SetOutputs(out))
	}
	if err != nil {
		return err
	}
	sec.Status = state.StatusSucceeded
	return nil
}

// check puts p's check report into sec; a report that is not OK fails the
// run, after saying what could not be checked.
func check(ctx context.Context, p Phase, in *Input, sec *state.Section) error {
	rep, err := p.Check(ctx, in)
	if err != nil {
		return err
	}
	if err := sec.SetOutputs(rep); err != nil {
		return err
	}
	sec.Status = state.StatusSucceeded
	if !rep.OK {
		for _, r := range rep.Incomplete {
			in.Out.Warn("check incomplete: %s", r)
		}
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// setDone records success (planned in a dry run) unless the phase already
// chose a status, such as deferred.
func setDone(sec *state.Section, dryRun bool) {
	switch {
	case sec.Status != "":
	case dryRun:
		sec.Status = state.StatusPlanned
	default:
		sec.Status = state.StatusSucceeded
	}
}

func (o *Options) load(ctx context.Context, action string, out *ui.Printer) (*config.Cluster, error) {
	sections, err := plugin.ConfigSections(ctx, o.LookupEnv, plugin.SelfDir(), func(msg string) { out.Warn("%s", msg) })
	if err != nil {
		return nil, err
	}
	return o.Load(o.Dir, config.LoadOptions{
		PluginSections:    sections,
		NeedCredentials:   action != ActionCheck,
		MissingIncludesOK: action == ActionCheck,
	})
}

func (o *Options) write(doc *state.Document, name string, sec state.Section) error {
	if err := doc.Put(name, sec); err != nil {
		return err
	}
	return state.Write(o.Streams.Out, doc)
}

// readState reads the document on r unless r is a terminal (never hang
// waiting on a human).
func readState(r io.Reader) (*state.Document, error) {
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return nil, nil //nolint:nilnil // a terminal means "start a new document"
	}
	return state.Read(r)
}

// compatible refuses a document from another cluster, or a planned document
// feeding a converge (the earlier phase only planned, it changed nothing).
func compatible(doc *state.Document, cluster, name, action string, dryRun bool) error {
	if doc.Cluster != "" && doc.Cluster != cluster {
		return fmt.Errorf("the state on stdin is for cluster %q but cluster.yaml is for %q", doc.Cluster, cluster)
	}
	for _, up := range Upstream(name, action) {
		s, ok, err := doc.Section(up)
		if err != nil {
			return err
		}
		if ok && (s.Status == state.StatusPlanned || s.Status == state.StatusDeferred) && !dryRun {
			return fmt.Errorf("phase %q only planned; feed %s from \"tc-%s %s\", not from a plan", up, action, up, action)
		}
	}
	return nil
}

// blockedBy returns the first upstream phase that failed or was skipped;
// status and check report whatever is there, so nothing blocks them.
func blockedBy(doc *state.Document, name, action string) string {
	if action == ActionStatus || action == ActionCheck {
		return ""
	}
	for _, up := range Upstream(name, action) {
		s, ok, err := doc.Section(up)
		if err != nil || (ok && slices.Contains([]state.Status{state.StatusFailed, state.StatusSkipped}, s.Status)) {
			return up
		}
	}
	return ""
}
