package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
)

// notConfigured is the message of a hook skipped because the plugin is not
// set up for the cluster.
const notConfigured = "not configured; nothing to do"

// options is one run of a plugin binary's hook.
type options struct {
	dir    string
	dryRun bool
	yes    bool

	streams cli.Streams
	spec    Spec
	desc    Descriptor
}

func (o *options) getenv(key string) string {
	v, _ := o.spec.LookupEnv(key)
	return v
}

// underFrontDoor reports whether the front door runs this plugin (it renders
// results itself, so the plugin need not repeat them).
func (o *options) underFrontDoor() bool {
	_, ok := o.spec.LookupEnv(EnvPath)
	return ok
}

// run performs hook and writes the document. Whenever a document can be
// written at all it is, with the plugin's section saying what happened.
func (o *options) run(ctx context.Context, hook string) error {
	doc, err := readState(o.streams.In)
	if err != nil {
		return cli.Usage(err)
	}
	c, err := o.context(doc)
	if err != nil {
		return cli.Usage(err)
	}
	sec := state.Section{Producer: o.desc.Producer()}
	if hook != HookInit {
		if err := o.load(ctx, hook, c); err != nil {
			problems := problemLines(err)
			err = fmt.Errorf("invalid configuration: %w", err)
			sec.Fail(err)
			sec.Error.Problems = problems
			return errors.Join(&cli.ExitError{Code: cli.ExitUsage, Err: err}, o.write(c, hook, sec))
		}
		if doc != nil && doc.Cluster != "" && c.Config.Name != "" && doc.Cluster != c.Config.Name {
			err := fmt.Errorf("the state on stdin is for cluster %q but cluster.yaml is for %q", doc.Cluster, c.Config.Name)
			sec.Fail(err)
			return errors.Join(&cli.ExitError{Code: cli.ExitUsage, Err: err}, o.write(c, hook, sec))
		}
	}
	if c.State == nil {
		c.State = o.newDocument(c, hook) // hooks always see a document
	}
	runErr := o.dispatch(ctx, hook, c, &sec)
	return errors.Join(runErr, o.write(c, hook, sec))
}

// context builds the hook's Context from the flags and the environment.
func (o *options) context(doc *state.Document) (*Context, error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return nil, fmt.Errorf("cluster directory %q: %w", o.dir, err)
	}
	c := &Context{
		Dir:         dir,
		State:       doc,
		DryRun:      o.dryRun,
		Yes:         o.yes,
		Log:         o.streams.ErrOut,
		Getenv:      o.getenv,
		Kubeconfig:  o.getenv(EnvKubeconf),
		Talosconfig: o.getenv(EnvTalosconf),
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Kubeconfig == "" {
		c.Kubeconfig = filepath.Join(dir, config.KubeconfigFile)
	}
	if c.Talosconfig == "" {
		c.Talosconfig = filepath.Join(dir, config.TalosconfigFile)
	}
	return c, nil
}

// load reads cluster.yaml strictly, accepting every installed plugin's
// sections, and picks this plugin's sections out of it.
func (o *options) load(ctx context.Context, hook string, c *Context) error {
	sections, err := ConfigSections(ctx, o.spec.LookupEnv, SelfDir(), func(msg string) {
		fmt.Fprintf(c.Log, "WARNING: %s\n", msg)
	})
	if err != nil {
		return err
	}
	for _, s := range o.desc.ConfigSections {
		if _, taken := sections[s]; !taken {
			sections[s] = o.desc.Name
		}
	}
	cfg, err := o.spec.Load(c.Dir, config.LoadOptions{
		PluginSections:    sections,
		MissingIncludesOK: hook == HookCheck,
	})
	if err != nil {
		return err
	}
	if cfg == nil {
		return errors.New("the configuration loader returned nothing")
	}
	if !o.underFrontDoor() {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(c.Log, "WARNING: %s\n", w)
		}
	}
	c.Config = cfg
	c.Section = map[string]any{}
	for _, s := range o.desc.ConfigSections {
		if v, ok := cfg.Plugins[s]; ok {
			c.Section[s] = v
		}
	}
	return nil
}

// write stores sec as the plugin's section and writes the document.
func (o *options) write(c *Context, hook string, sec state.Section) error {
	doc := c.State
	if doc == nil {
		doc = o.newDocument(c, hook)
	}
	if err := doc.Put(o.desc.Name, sec); err != nil {
		return err
	}
	return state.Write(o.streams.Out, doc)
}

// newDocument starts the document of a run that got none on stdin.
func (o *options) newDocument(c *Context, hook string) *state.Document {
	name := ""
	if c.Config != nil {
		name = c.Config.Name
	}
	return state.New(name, actionOf(hook, o.dryRun))
}

// actionOf is the document action of a new document started by hook.
func actionOf(hook string, dryRun bool) string {
	switch hook {
	case HookConverge:
		if dryRun {
			return "plan"
		}
		return HookConverge
	case HookDestroy, HookStatus, HookCheck:
		return hook
	default:
		return ""
	}
}

// readState reads the document on r unless r is a terminal (never hang
// waiting on a human). A terminal or empty input means a new document.
func readState(r io.Reader) (*state.Document, error) {
	if r == nil {
		return nil, nil //nolint:nilnil // no input means "start a new document"
	}
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return nil, nil //nolint:nilnil // a terminal means "start a new document"
	}
	return state.Read(r)
}

// dispatch runs hook and records its outcome in sec. The error carries the
// exit code (as a *cli.ExitError) when the hook did not succeed.
func (o *options) dispatch(ctx context.Context, hook string, c *Context, sec *state.Section) error {
	switch hook {
	case HookInit:
		return o.initHook(ctx, c, sec)
	case HookValidate:
		return o.validate(ctx, c, sec)
	case HookConfigured:
		return o.configuredHook(ctx, c, sec)
	}
	if hook == HookConverge || hook == HookDestroy {
		// "plugin NAME converge|plan|destroy" validates first, even when the
		// plugin is not configured; the front door does too, this is cheap.
		if err := o.validate(ctx, c, sec); err != nil {
			return err
		}
	}
	if settled, err := o.skipUnconfigured(ctx, c, sec); settled {
		return err
	}
	return o.configuredOnly(ctx, hook, c, sec)
}

// initHook runs the Init hook and records the sections it declares.
func (o *options) initHook(ctx context.Context, c *Context, sec *state.Section) error {
	sections, err := o.spec.Hooks.Init(ctx, c)
	if err != nil {
		return fail(sec, err)
	}
	if sections == nil {
		sections = []InitSection{}
	}
	return succeed(sec, map[string]any{"sections": sections})
}

// configuredHook runs the Configured hook and records its answer.
func (o *options) configuredHook(ctx context.Context, c *Context, sec *state.Section) error {
	ok, err := o.spec.Hooks.Configured(ctx, c)
	if err != nil {
		return fail(sec, err)
	}
	return succeed(sec, map[string]any{"configured": ok})
}

// skipUnconfigured asks the Configured hook before a hook that needs a
// configured plugin. It reports settled when the section is already
// decided: failed (no Configured hook, or it failed) or skipped (the
// plugin is not configured), with the error to return.
func (o *options) skipUnconfigured(ctx context.Context, c *Context, sec *state.Section) (settled bool, err error) {
	if o.spec.Hooks.Configured == nil {
		return true, fail(sec, fmt.Errorf("plugin %s does not implement the required %s hook", o.desc.Name, HookConfigured))
	}
	ok, err := o.spec.Hooks.Configured(ctx, c)
	if err != nil {
		return true, fail(sec, fmt.Errorf("cannot tell whether %s is configured: %w", o.desc.Name, err))
	}
	if ok {
		return false, nil
	}
	sec.Status = state.StatusSkipped
	sec.Messages = []string{notConfigured}
	if !o.underFrontDoor() {
		fmt.Fprintf(c.Log, "%s: %s\n", o.desc.Name, notConfigured)
	}
	return true, nil
}

// configuredOnly runs a hook that needs a configured plugin: converge,
// destroy, status or check.
func (o *options) configuredOnly(ctx context.Context, hook string, c *Context, sec *state.Section) error {
	h := o.spec.Hooks
	switch hook {
	case HookConverge:
		r, err := h.Converge(ctx, c)
		return o.result(c, sec, r, err)
	case HookDestroy:
		r, err := h.Destroy(ctx, c)
		return o.result(c, sec, r, err)
	case HookStatus:
		rep, err := h.Status(ctx, c)
		return report(sec, rep, err, false)
	case HookCheck:
		rep, err := h.Check(ctx, c)
		return report(sec, rep, err, true)
	default:
		return cli.Usagef("unknown hook %q", hook)
	}
}

// validate runs the Validate hook when there is one. Problems make the
// section failed and exit 2.
func (o *options) validate(ctx context.Context, c *Context, sec *state.Section) error {
	if o.spec.Hooks.Validate == nil {
		sec.Status = state.StatusSucceeded
		return nil
	}
	problems := o.spec.Hooks.Validate(ctx, c)
	if len(problems) == 0 {
		sec.Status = state.StatusSucceeded
		return nil
	}
	err := fmt.Errorf("invalid %s configuration: %s", o.desc.Name, strings.Join(problems, "; "))
	sec.Status = state.StatusFailed
	sec.Error = &state.Error{Message: fmt.Sprintf("invalid %s configuration", o.desc.Name), Problems: problems}
	return &cli.ExitError{Code: cli.ExitUsage, Err: err}
}

// result records what converge or destroy returned.
func (o *options) result(c *Context, sec *state.Section, r Result, err error) error {
	sec.Messages, sec.Plan = r.Messages, r.Plan
	if r.Outputs != nil {
		if serr := sec.SetOutputs(r.Outputs); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	var deferred *DeferredError
	switch {
	case errors.As(err, &deferred):
		sec.Status = state.StatusDeferred
		sec.Messages = append(sec.Messages, deferred.Reason)
	case err != nil:
		return fail(sec, err)
	case r.Status == "":
		sec.Status = state.StatusSucceeded
		if c.DryRun {
			sec.Status = state.StatusPlanned
		}
	case r.Status == state.StatusFailed:
		msg := "failed"
		if len(r.Messages) > 0 {
			msg = r.Messages[len(r.Messages)-1]
		}
		return fail(sec, errors.New(msg))
	case knownStatus(r.Status):
		sec.Status = r.Status
	default:
		return fail(sec, fmt.Errorf("the plugin returned the unknown status %q", r.Status))
	}
	if !o.underFrontDoor() && (sec.Status == state.StatusDeferred || sec.Status == state.StatusSkipped) {
		fmt.Fprintf(c.Log, "%s: %s: %s\n", o.desc.Name, sec.Status, strings.Join(sec.Messages, "; "))
	}
	return nil
}

// report records a status or check report. A deferral is not a failure; an
// error is, and a check report without a boolean "ok" is too.
func report(sec *state.Section, rep map[string]any, err error, check bool) error {
	var deferred *DeferredError
	switch {
	case errors.As(err, &deferred):
		sec.Status = state.StatusDeferred
		sec.Messages = []string{deferred.Reason}
		out := map[string]any{"deferred": true, "reason": deferred.Reason}
		if check {
			out["ok"] = false // nothing was checked, so nothing is known to be fine
		}
		return sec.SetOutputs(out)
	case err != nil:
		out := map[string]any{"error": err.Error()}
		if check {
			out["ok"] = false
		}
		_ = sec.SetOutputs(out)
		return fail(sec, err)
	}
	if rep == nil {
		rep = map[string]any{}
	}
	if _, isBool := rep["ok"].(bool); check && !isBool {
		return fail(sec, errors.New(`the check report has no boolean "ok"`))
	}
	return succeed(sec, rep)
}

// succeed marks sec succeeded with outputs.
func succeed(sec *state.Section, outputs any) error {
	if err := sec.SetOutputs(outputs); err != nil {
		return fail(sec, err)
	}
	sec.Status = state.StatusSucceeded
	return nil
}

// fail marks sec failed with err and returns exit code 1.
func fail(sec *state.Section, err error) error {
	sec.Fail(err)
	return &cli.ExitError{Code: cli.ExitFailure, Err: err}
}
