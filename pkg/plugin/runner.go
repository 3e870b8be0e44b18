package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/state"
)

// Runner runs plugin hooks under the protocol (see the package doc).
type Runner struct {
	// Env is the base environment of every plugin; the front door has added
	// the TALOSC_* variables. Runner sets EnvPluginName and EnvStateAPI itself.
	// nil means the current process's environment.
	Env []string
	// Stderr receives the plugins' stderr, each line prefixed "[NAME] ". nil
	// discards it.
	Stderr io.Writer
	// Timeout returns the timeout of hook; nil (or a non-positive answer)
	// means DefaultTimeout. EnvTimeout in Env overrides every timeout.
	Timeout func(hook string) time.Duration
}

// CallOptions are the flags a hook is run with.
type CallOptions struct {
	// DryRun passes --dry-run: converge only plans ("plan"), destroy only
	// reports what it would remove.
	DryRun bool
	// Yes passes --yes: the user already confirmed.
	Yes bool
}

// HookError is a plugin hook that failed: it crashed, exited non-zero, timed
// out, wrote something that is not a valid state document for it, or recorded
// a failed section.
type HookError struct {
	Plugin string
	Hook   string
	// ExitCode is the plugin's exit status: -1 when it did not exit on its
	// own (killed after a timeout, crashed on a signal, could not start), 0
	// when it exited 0 but its output was refused or its section failed.
	ExitCode int
	Err      error
}

func (e *HookError) Error() string {
	return fmt.Sprintf("plugin %s failed during %s: %v", e.Plugin, e.Hook, e.Err)
}

// Unwrap returns the underlying error.
func (e *HookError) Unwrap() error { return e.Err }

// Call runs one hook of p with in on stdin. It returns the document the
// plugin wrote (only p's own section can differ from in) and that section.
//
// It refuses output that is not a state document, that changed another
// plugin's or phase's section, the cluster or the action, or that lacks p's own
// section. A crash, a non-zero exit, bad output or a timeout is returned as a
// *HookError; the document and section returned then still record the
// failure: section p.Name has status failed and says why (a plugin that wrote
// a valid document before exiting non-zero keeps its own section, marked
// failed, so a validate refusal keeps its problems). On timeout or
// cancellation the plugin's whole process group is killed.
func (r *Runner) Call(ctx context.Context, p Plugin, hook string, in *state.Document, o CallOptions) (*state.Document, state.Section, error) {
	if in == nil {
		in = state.New("", "")
	}
	var stdin bytes.Buffer
	if err := state.Write(&stdin, in); err != nil {
		return r.refuse(p, hook, in, -1, err, nil)
	}
	args := []string{hook}
	if o.DryRun {
		args = append(args, "--dry-run")
	}
	if o.Yes {
		args = append(args, "--yes")
	}
	env := r.env(p)
	errOut := r.Stderr
	if errOut == nil {
		errOut = io.Discard
	}
	pw := newPrefixWriter(errOut, "["+p.Name+"] ")
	res := execute(ctx, invocation{
		path:    p.Path,
		args:    args,
		env:     env,
		stdin:   stdin.Bytes(),
		stderr:  pw,
		timeout: r.timeout(hook, env),
	})
	pw.Flush()
	return r.interpret(p, hook, in, res)
}

// RunAll runs hook on each plugin of ps in order, feeding each the document
// the previous one produced, so results of earlier plugins reach later ones.
// Plugins that do not implement hook are skipped (no section is written for
// them). Failures are contained: a failing plugin's section is recorded as
// failed and the other plugins still run. The error joins every *HookError
// (nil when all succeeded); when ctx ends the remaining plugins are not run.
// For destroy, pass ps reversed.
func (r *Runner) RunAll(ctx context.Context, ps []Plugin, hook string, doc *state.Document, o CallOptions) (*state.Document, error) {
	if doc == nil {
		doc = state.New("", "")
	}
	var errs []error
	for _, p := range ps {
		if !p.Implements(hook) {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s not run: %w", p.Name, err))
			break
		}
		next, _, err := r.Call(ctx, p, hook, doc, o)
		doc = next
		if err != nil {
			errs = append(errs, err)
		}
	}
	return doc, errors.Join(errs...)
}

// env is the environment p runs with.
func (r *Runner) env(p Plugin) []string {
	base := r.Env
	if base == nil {
		base = os.Environ()
	}
	return cli.WithEnv(base, map[string]string{EnvPluginName: p.Name, EnvStateAPI: state.APIVersion})
}

// timeout is the timeout of hook under env.
func (r *Runner) timeout(hook string, env []string) time.Duration {
	if d, ok := timeoutOverride(env); ok {
		return d
	}
	if r.Timeout != nil {
		if d := r.Timeout(hook); d > 0 {
			return d
		}
	}
	return DefaultTimeout(hook)
}

// interpret checks what the plugin wrote and builds Call's results.
func (r *Runner) interpret(p Plugin, hook string, in *state.Document, res outcome) (*state.Document, state.Section, error) {
	if res.err != nil && (res.exitCode <= 0 || res.timedOut) {
		// killed, crashed on a signal, never started, or its output was cut:
		// nothing it wrote can be trusted
		return r.refuse(p, hook, in, res.exitCode, res.err, nil)
	}
	out, err := state.Parse(res.stdout)
	switch {
	case err != nil:
		return r.refuse(p, hook, in, res.exitCode, exitContext(res, fmt.Errorf("wrote invalid state: %w", err)), nil)
	case out == nil:
		return r.refuse(p, hook, in, res.exitCode, exitContext(res, errors.New("wrote no state document")), nil)
	}
	if err := keptTheRest(p.Name, in, out); err != nil {
		return r.refuse(p, hook, in, res.exitCode, err, nil)
	}
	raw, ok := out.Sections[p.Name]
	if !ok {
		return r.refuse(p, hook, in, res.exitCode, exitContext(res, fmt.Errorf("plugin %s wrote no %q section", p.Name, p.Name)), nil)
	}
	sec, _, err := out.Section(p.Name)
	if err != nil {
		return r.refuse(p, hook, in, res.exitCode, err, nil)
	}
	if !knownStatus(sec.Status) {
		return r.refuse(p, hook, in, res.exitCode, fmt.Errorf("plugin %s wrote section status %q", p.Name, sec.Status), nil)
	}
	if res.err != nil || sec.Status == state.StatusFailed {
		return r.refuse(p, hook, in, res.exitCode, errors.New(failureReason(res, sec)), &sec)
	}
	doc := cloneDoc(in)
	putRaw(doc, p.Name, raw)
	return doc, sec, nil
}

// keptTheRest refuses a document out in which plugin changed another
// owner's section, or the cluster or action of in.
func keptTheRest(plugin string, in, out *state.Document) error {
	if changed := state.ChangedOtherThan(in, out, plugin); len(changed) > 0 {
		what := "section " + changed[0]
		if len(changed) > 1 {
			what = "sections " + strings.Join(changed, ", ")
		}
		return fmt.Errorf("plugin %s changed %s it does not own", plugin, what)
	}
	if out.Cluster != in.Cluster || out.Action != in.Action {
		return fmt.Errorf("plugin %s changed the document's cluster or action", plugin)
	}
	return nil
}

// failureReason says why a plugin that exited non-zero or wrote a failed
// section failed: the section's error message, the exit status, or both.
func failureReason(res outcome, sec state.Section) string {
	reason := "the section says it failed"
	if sec.Error != nil && sec.Error.Message != "" {
		reason = sec.Error.Message
	}
	if res.err != nil {
		reason = fmt.Sprintf("%s (exit status %d)", reason, res.exitCode)
		if sec.Error == nil {
			reason = fmt.Sprintf("exit status %d", res.exitCode)
		}
	}
	return reason
}

// refuse records a failed section for p in a copy of in and returns the
// *HookError. sec, when not nil, is the section the plugin wrote; it is kept
// and marked failed.
func (r *Runner) refuse(p Plugin, hook string, in *state.Document, code int, err error, sec *state.Section) (*state.Document, state.Section, error) {
	s := state.Section{Producer: p.Producer()}
	if sec != nil {
		s = *sec
	}
	s.Status = state.StatusFailed
	if s.Error == nil {
		s.Error = &state.Error{Message: fmt.Sprintf("%s failed: %v", hook, err)}
	}
	doc := cloneDoc(in)
	if perr := doc.Put(p.Name, s); perr != nil {
		err = errors.Join(err, perr)
	}
	return doc, s, &HookError{Plugin: p.Name, Hook: hook, ExitCode: code, Err: err}
}

// exitContext adds the exit status to err when the plugin exited non-zero.
func exitContext(res outcome, err error) error {
	if res.err == nil {
		return err
	}
	return fmt.Errorf("%w (exit status %d)", err, res.exitCode)
}

func knownStatus(s state.Status) bool {
	return slices.Contains([]state.Status{
		state.StatusPlanned, state.StatusSucceeded, state.StatusFailed, state.StatusDeferred, state.StatusSkipped,
	}, s)
}

// cloneDoc copies d deeply enough that changing sections of the copy leaves d
// alone (raw sections themselves are never modified in place).
func cloneDoc(d *state.Document) *state.Document {
	c := *d
	c.Sections = maps.Clone(d.Sections)
	if c.Sections == nil {
		c.Sections = map[string]json.RawMessage{}
	}
	c.Order = slices.Clone(d.Order)
	return &c
}

// putRaw stores raw as section name, keeping the plugin's bytes as written.
func putRaw(d *state.Document, name string, raw json.RawMessage) {
	d.Sections[name] = raw
	d.Order = append(slices.DeleteFunc(d.Order, func(n string) bool { return n == name }), name)
}
