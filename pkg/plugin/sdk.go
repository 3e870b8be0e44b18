package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
)

// Context is what a hook gets to work with.
type Context struct {
	// Dir is the absolute cluster directory.
	Dir string
	// Config is the loaded cluster.yaml (with its includes). It is nil for
	// init, which runs before the configuration is complete.
	Config *config.Cluster
	// Section holds the raw value of each of the plugin's ConfigSections
	// present in the merged configuration, keyed by section name. A section
	// written as an explicit null is present with a nil value.
	Section map[string]any
	// State is the document read on stdin: earlier phases' and plugins'
	// sections (for example rancher's cluster id, for argocd). Hooks must not
	// modify it; they return their result instead.
	State *state.Document
	// DryRun asks converge and destroy to only report what they would do.
	DryRun bool
	// Yes means the user already confirmed (destroy).
	Yes bool
	// Log is for humans (stderr).
	Log io.Writer
	// Getenv reads the environment.
	Getenv func(string) string
	// Kubeconfig and Talosconfig are the cluster's client files; they may not
	// exist (the cluster was never bootstrapped).
	Kubeconfig, Talosconfig string
}

// Bootstrapped reports whether the cluster's kubeconfig exists and is not
// empty: the reference tool's "was bootstrapped" signal.
func (c *Context) Bootstrapped() bool {
	fi, err := os.Stat(c.Kubeconfig)
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}

// Hooks are a plugin's implementations. Configured and Converge are required;
// a nil optional hook is not offered (it is left out of the descriptor).
type Hooks struct {
	// Init returns scaffold snippets for "talosc init".
	Init func(ctx context.Context, c *Context) ([]InitSection, error)
	// Validate returns the problems of the plugin's configuration, each
	// "key.path: message"; none means valid. It must treat an absent section
	// as valid and refuse a supplied-but-invalid one even when the plugin is
	// not configured.
	Validate func(ctx context.Context, c *Context) []string
	// Configured reports whether the plugin is set up for this cluster.
	// Converge, destroy, status and check run only when it is.
	Configured func(ctx context.Context, c *Context) (bool, error)
	// Converge makes what the plugin manages match the configuration (or, in
	// a dry run, reports what it would change).
	Converge func(ctx context.Context, c *Context) (Result, error)
	// Destroy removes what the plugin manages.
	Destroy func(ctx context.Context, c *Context) (Result, error)
	// Status returns a report for "talosc status".
	Status func(ctx context.Context, c *Context) (map[string]any, error)
	// Check returns a report for "talosc check"; it must carry "ok": bool.
	Check func(ctx context.Context, c *Context) (map[string]any, error)
}

// Result is what converge or destroy did.
type Result struct {
	// Status defaults to succeeded (planned in a dry run). Use deferred when
	// the work needs something that does not exist yet, failed to fail with
	// Messages as the reason.
	Status state.Status
	// Outputs are published in the section for later plugins and the front
	// door; any JSON-encodable value.
	Outputs any
	// Plan lists the changes made (or, in a dry run, that would be made),
	// which the front door renders and counts with the phases'.
	Plan []state.Change
	// Messages are notes for humans.
	Messages []string
}

// InitSection is a YAML snippet "talosc init" appends to File (relative to
// the cluster directory) when File has no top-level key Name yet.
type InitSection struct {
	Name string `json:"name"`
	File string `json:"file"`
	YAML string `json:"yaml"`
}

// DeferredError is returned by a hook whose work needs something that does
// not exist yet (typically the kubeconfig of a cluster not yet bootstrapped).
// The section becomes "deferred" with Reason as its message; it is not a
// failure.
type DeferredError struct{ Reason string }

func (e *DeferredError) Error() string { return "deferred: " + e.Reason }

// Defer returns a *DeferredError with reason.
func Defer(reason string) error { return &DeferredError{Reason: reason} }

// Spec describes a plugin binary to NewCommand.
type Spec struct {
	// Descriptor is what describe prints. Hooks and StateAPIVersions are
	// filled in by NewCommand (from the non-nil Hooks and state.APIVersion).
	Descriptor Descriptor
	// Short is the one-line help of the binary.
	Short string
	// Hooks are the implementations.
	Hooks Hooks
	// Load reads the configuration; nil means config.Load.
	Load func(dir string, o config.LoadOptions) (*config.Cluster, error)
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// hookCommand is one hook subcommand NewCommand may offer.
type hookCommand struct {
	name        string
	help        string // the one-line help of the subcommand
	implemented bool   // the Hooks field is not nil
}

// hookCommands lists every hook, in lifecycle order (AllHooks), with its help
// and whether Hooks implements it.
func (s Spec) hookCommands() []hookCommand {
	h := s.Hooks
	return []hookCommand{
		{HookInit, "Print the scaffold sections talosc init appends", h.Init != nil},
		{HookValidate, "Check the plugin's configuration (exit 2 when invalid)", h.Validate != nil},
		{HookConfigured, "Report whether the plugin is set up for this cluster", h.Configured != nil},
		{HookConverge, "Make what the plugin manages match cluster.yaml (--dry-run: plan)", h.Converge != nil},
		{HookDestroy, "Remove what the plugin manages", h.Destroy != nil},
		{HookStatus, "Report what the plugin manages", h.Status != nil},
		{HookCheck, "Report whether anything needs attention (outputs carry \"ok\")", h.Check != nil},
	}
}

// describe returns the descriptor with the hooks that Hooks implements.
func (s Spec) describe() Descriptor {
	d := s.Descriptor
	d.Hooks = nil
	for _, h := range s.hookCommands() {
		if h.implemented {
			d.Hooks = append(d.Hooks, h.name)
		}
	}
	if len(d.StateAPIVersions) == 0 {
		d.StateAPIVersions = []string{state.APIVersion}
	}
	return d
}

// NewCommand returns a plugin binary's root command: "describe" plus one
// subcommand per implemented hook, with the flags -C/--dir (default
// $TALOSC_DIR, else "."), --dry-run and --yes. See the package doc for the
// protocol it speaks.
func NewCommand(s cli.Streams, spec Spec) *cobra.Command {
	if spec.LookupEnv == nil {
		spec.LookupEnv = os.LookupEnv
	}
	if spec.Load == nil {
		spec.Load = config.Load
	}
	d := spec.describe()
	o := &options{streams: s, spec: spec, desc: d}
	binary := Prefix + d.Name
	short := spec.Short
	if short == "" {
		short = "The " + d.Name + " talosc plugin"
	}
	root := &cobra.Command{
		Use:   binary + " HOOK [flags] < state.json > state.json",
		Short: short,
		Long: fmt.Sprintf(`%s is a talosc plugin. "kubectl talosc" runs its hooks; each reads the JSON
state document on stdin (when stdin is not a terminal), loads cluster.yaml from
-C DIR, and writes the document with its own %q section on stdout. Messages
for humans go to stderr. "%s describe" prints what the plugin is.

`, binary, d.Name, binary) + cli.ExitCodesHelp,
		Version:       d.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	dir := "."
	if v, ok := spec.LookupEnv(EnvDir); ok && v != "" {
		dir = v
	}
	f := root.PersistentFlags()
	f.StringVarP(&o.dir, "dir", "C", dir, "the cluster directory `DIR`, holding cluster.yaml")
	f.BoolVar(&o.dryRun, "dry-run", false, "converge/destroy: only report what would change")
	f.BoolVar(&o.yes, "yes", false, "destroy: the user already confirmed")
	root.AddCommand(&cobra.Command{
		Use:   HookDescribe,
		Short: "Print the plugin descriptor as JSON",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return writeJSON(s.Out, d)
		},
	})
	for _, h := range spec.hookCommands() {
		if !h.implemented {
			continue
		}
		root.AddCommand(&cobra.Command{
			Use:   h.name,
			Short: h.help,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd.Context(), h.name)
			},
		})
	}
	return root
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// problemLines turns a configuration load error into problem lines.
func problemLines(err error) []string {
	if ps, ok := errors.AsType[config.Problems](err); ok {
		return ps.Lines()
	}
	return []string{err.Error()}
}
