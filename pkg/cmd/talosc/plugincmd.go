package talosc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
)

// PluginOptions configures "plugin list" and "plugin NAME [ACTION]".
type PluginOptions struct {
	Globals *Globals
	Name    string
	Action  string
	DryRun  bool
	Yes     bool
	Output  string
}

func newPluginCommand(g *Globals) *cobra.Command {
	o := &PluginOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "plugin NAME [converge|plan|destroy|status|check]",
		Short: "Run one plugin's hook, or list the installed plugins",
		Long: `Plugins are tc-NAME executables on PATH (other than the builtin phases
tc-image, tc-net and tc-nodes). "plugin list" shows them in run order;
"plugin NAME ACTION" runs one of them (ACTION defaults to converge; plan is
converge in dry-run). For converge, plan and destroy the plugin's validate hook
runs first, even when it is not configured.

` + cli.ExitCodesHelp,
		Example: `  # Which plugins are installed, and in which order do they run?
  kubectl talosc plugin list -C prod

  # Re-run only the rancher registration
  kubectl talosc plugin rancher converge -C prod`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.Action = args[0], plugin.HookConverge
			if len(args) == 2 {
				o.Action = args[1]
			}
			if !slices.Contains([]string{actionConverge, actionPlan, actionDestroy, actionStatus, actionCheck}, o.Action) {
				return cli.Usagef("plugin action %q: must be one of converge, plan, destroy, status, check", o.Action)
			}
			if err := validateOutput(o.Output, "text", "json", "yaml"); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "plan only")
	f.BoolVar(&o.Yes, "yes", false, "do not ask for the cluster name before destroy")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text, json or yaml")
	cmd.AddCommand(newPluginListCommand(g))
	return cmd
}

// Run runs one hook of one plugin.
func (o *PluginOptions) Run(ctx context.Context) error {
	s, err := o.Globals.open(ctx, loadNoCredentials)
	if err != nil {
		return err
	}
	p, hook, dryRun, err := o.pluginHook(s)
	if err != nil {
		return err
	}
	doc := state.New(s.cfg.Name, o.Action)
	if proceed, err := o.readyToCall(ctx, s, p, hook, dryRun, doc); !proceed || err != nil {
		return err
	}
	// Call always returns a document; on failure it records the failed section.
	out, sec, callErr := s.runner().Call(ctx, p, hook, doc, plugin.CallOptions{DryRun: dryRun, Yes: true})
	if hook == plugin.HookStatus || hook == plugin.HookCheck {
		return o.printHookReport(s, p.Name, sec, callErr)
	}
	s.renderPlan(out, dryRun)
	if err := s.printDocument(out, o.Output); err != nil {
		return err
	}
	if callErr != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: callErr}
	}
	return nil
}

// pluginHook is the installed plugin the command names and the hook its
// action runs ("plan" is a dry-run converge), which the plugin must
// implement.
func (o *PluginOptions) pluginHook(s *session) (p plugin.Plugin, hook string, dryRun bool, err error) {
	idx := slices.IndexFunc(s.plugins, func(p plugin.Plugin) bool { return p.Name == o.Name })
	if idx < 0 {
		return plugin.Plugin{}, "", false, cli.Usagef("no plugin %q is installed (installed: %s)", o.Name, pluginNames(s.plugins))
	}
	p = s.plugins[idx]
	hook, dryRun = o.Action, o.DryRun
	if hook == actionPlan {
		hook, dryRun = plugin.HookConverge, true
	}
	if !p.Implements(hook) {
		return plugin.Plugin{}, "", false, fmt.Errorf("plugin %s does not implement %s", p.Name, hook)
	}
	return p, hook, dryRun, nil
}

// readyToCall validates the plugin before converge or destroy, skips a
// plugin that is not configured (proceed false, no error), and confirms
// a destroy unless --yes or a dry run.
func (o *PluginOptions) readyToCall(ctx context.Context, s *session, p plugin.Plugin, hook string, dryRun bool, doc *state.Document) (proceed bool, err error) {
	if hook == plugin.HookConverge || hook == plugin.HookDestroy {
		if err := s.validatePlugins(ctx, []plugin.Plugin{p}, doc); err != nil {
			return false, err
		}
	}
	if len(s.activePlugins(ctx, []plugin.Plugin{p}, doc)) == 0 {
		s.out.Info("plugin %s is not configured in %s; nothing to do", p.Name, s.dir)
		return false, nil
	}
	if hook == plugin.HookDestroy && !o.Yes && !dryRun {
		if err := confirm(ctx, o.Globals.Streams, "type the cluster name to confirm: ", s.cfg.Name); err != nil {
			return false, err
		}
	}
	return true, nil
}

// printHookReport prints a status or check report: text, or {name: report}.
func (o *PluginOptions) printHookReport(s *session, name string, sec state.Section, callErr error) error {
	var rep any = map[string]any{"ok": false, "error": errString(callErr, sec)}
	if callErr == nil && len(sec.Outputs) > 0 {
		if err := json.Unmarshal(sec.Outputs, &rep); err != nil {
			return fmt.Errorf("plugin %s: %w", name, err)
		}
	}
	w := s.g.Streams.Out
	done, err := writeStructured(w, o.Output, map[string]any{name: rep})
	if err != nil {
		return err
	}
	if !done {
		var b strings.Builder
		if err := writeYAML(&b, rep); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s:\n", name)
		writeIndented(w, b.String())
	}
	if o.Action == actionCheck && !report.SectionOK(sec.Outputs) || callErr != nil && o.Action == actionCheck {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

func errString(err error, sec state.Section) string {
	switch {
	case err != nil:
		return err.Error()
	case sec.Error != nil:
		return sec.Error.Message
	default:
		return ""
	}
}

func pluginNames(ps []plugin.Plugin) string {
	if len(ps) == 0 {
		return "none"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// PluginListEntry is one row of "plugin list -o json|yaml".
type PluginListEntry struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Path       string   `json:"path"`
	After      []string `json:"after,omitempty"`
	Configured *bool    `json:"configured,omitempty"`
}

func newPluginListCommand(g *Globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the installed plugins in run order, and whether each is configured",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateOutput(output, "text", "json", "yaml"); err != nil {
				return err
			}
			return runPluginList(cmd.Context(), g, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func runPluginList(ctx context.Context, g *Globals, output string) error {
	s, err := g.open(ctx, loadOptional)
	if err != nil {
		return err
	}
	entries := make([]PluginListEntry, 0, len(s.plugins))
	for _, p := range s.plugins {
		e := PluginListEntry{Name: p.Name, Version: p.Version, Path: p.Path, After: p.After}
		if s.cfg != nil {
			configured := len(s.activePlugins(ctx, []plugin.Plugin{p}, state.New(s.cfg.Name, "list"))) == 1
			e.Configured = &configured
		}
		entries = append(entries, e)
	}
	w := g.Streams.Out
	if done, err := writeStructured(w, output, entries); done {
		return err
	}
	if len(entries) == 0 {
		s.out.Info("no plugins installed: put tc-NAME executables (such as tc-rancher and tc-argocd from the talosc release) on PATH")
		return nil
	}
	for _, e := range entries {
		line := e.Name + " " + e.Version
		if e.Configured != nil {
			line += map[bool]string{true: "  configured", false: "  not configured"}[*e.Configured]
		}
		if len(e.After) > 0 {
			line += "  (after " + strings.Join(e.After, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
	return nil
}
