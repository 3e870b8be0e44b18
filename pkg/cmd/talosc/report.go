package talosc

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// ReportOptions configures status and check.
type ReportOptions struct {
	Globals *Globals
	Action  string
	Output  string
	// Textfile and ExpiryWarning are check's (check.go).
	Textfile      string
	ExpiryWarning time.Duration
}

func newReportCommand(g *Globals, action string, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	o := &ReportOptions{Globals: g, Action: action}
	cmd := &cobra.Command{
		Use:  action,
		Args: cobra.NoArgs,
		RunE: outputRunE(o, &o.Output, nil, runF, o.Run),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text, json or yaml")
	if action == actionStatus {
		cmd.Short = "Report the provider, endpoints, owned resources, nodes and plugins"
		cmd.Long = "status reports what every phase owns and every configured plugin's report.\nPlugin errors are shown but never change the exit code.\n\n" + cli.ExitCodesHelp
		cmd.Example = "  # Status of ./prod as YAML\n  kubectl talosc status -C prod -o yaml"
		return cmd
	}
	cmd.Short = "Report what needs attention: versions, drift, cordons, plugins (for cron)"
	cmd.Long = "check compares the pinned versions with upstream and with the running nodes,\nreports certificate expiry and asks every configured plugin; text output is a\ntable of findings and what fixes each. It needs no provider credentials; when\nthey load it also looks for orphaned machines and plans (a dry run) what\nconverge would do. It exits 0 only when everything is up to date and the check\nwas complete, 1 otherwise.\n\n" + cli.ExitCodesHelp
	cmd.Example = "  # From cron: mail when something needs attention\n  kubectl talosc check -C /srv/clusters/prod || mail -s 'prod needs attention' ops"
	addCheckFlags(cmd, o)
	return cmd
}

// Report is what status prints with -o json|yaml.
type Report struct {
	Cluster  string                   `json:"cluster"`
	Provider string                   `json:"provider"`
	Sections map[string]ReportSection `json:"sections"`
	Order    []string                 `json:"order"`
}

// ReportSection is one phase's or plugin's part of a report.
type ReportSection = report.Section

// Run runs the phases' status or check, then the configured plugins'.
func (o *ReportOptions) Run(ctx context.Context) error {
	mode := loadCredentials
	if o.Action == actionCheck {
		mode = loadNoCredentials
	}
	if err := refuseClusterFile(o.Globals.Dir, "--textfile", o.Textfile); err != nil {
		return err
	}
	s, err := o.Globals.open(ctx, mode)
	if err != nil {
		return err
	}
	res, err := s.runPhases(ctx, o.Action, state.New(s.cfg.Name, o.Action), o.phaseArgs()...)
	if err != nil {
		return o.checkFailed(s, err)
	}
	doc, pluginErr := s.runActivePlugins(ctx, o.Action, res.doc, plugin.CallOptions{})
	if o.Action == actionCheck {
		s.checkPlan(ctx, doc)
		if err := o.check(s, doc); err != nil {
			return err
		}
	} else if err := s.printReport(buildReport(s, doc), o.Output); err != nil {
		return err
	}
	if res.code != 0 {
		return &cli.ExitError{Code: res.code, Err: fmt.Errorf("phase %s failed", res.failed)}
	}
	if pluginErr != nil {
		s.out.Warn("%v", pluginErr) // plugin errors are embedded in status, never change its exit code
	}
	return nil
}

// buildReport turns the document into a status report.
func buildReport(s *session, doc *state.Document) Report {
	rep := Report{Cluster: s.cfg.Name, Provider: s.cfg.Provider()}
	rep.Sections, rep.Order, _ = report.Sections(doc)
	return rep
}

// printReport prints status: -o json|yaml the report, text the view.
func (s *session) printReport(rep Report, output string) error {
	w := s.g.Streams.Out
	if done, err := writeStructured(w, output, rep); done {
		return err
	}
	printStatus(w, ui.New(w, s.g.Host.Environ), rep, s.cfg, s.g.Dir)
	return nil
}

func writeIndented(w io.Writer, text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
