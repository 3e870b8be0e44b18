package talosc

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// addCheckFlags adds check's flags for monitoring.
func addCheckFlags(cmd *cobra.Command, o *ReportOptions) {
	cmd.Flags().StringVar(&o.Textfile, "textfile", "", "also write the findings as Prometheus metrics to `FILE` (node-exporter's textfile collector format, written atomically, also when check exits 1)")
	cmd.Flags().DurationVar(&o.ExpiryWarning, "expiry-warning", report.DefaultExpiryWarning, "warn when a certificate (talosconfig, kubeconfig, cluster CAs) expires within this `DURATION`")
	cmd.Example += "\n\n  # From cron, for node-exporter's textfile collector\n  kubectl talosc check -C /srv/clusters/prod -o json --textfile /var/lib/node_exporter/textfile/talosc-prod.prom > /dev/null"
}

// phaseArgs are the flags check passes to every phase.
func (o *ReportOptions) phaseArgs() []string {
	if o.Action != actionCheck {
		return nil
	}
	return []string{"--expiry-warning", o.ExpiryWarning.String()}
}

// check prints the check report (-o json|yaml: the CheckReport document),
// writes the textfile, and exits 1 unless everything is up to date and the
// check was complete.
func (o *ReportOptions) check(s *session, doc *state.Document) error {
	rep := report.Build(doc, s.cfg.Provider(), s.pluginNames(), time.Now())
	rep.Cluster = s.cfg.Name
	textErr := o.writeTextfile(rep)
	if done, err := writeStructured(s.g.Streams.Out, o.Output, rep); done {
		if err != nil {
			return errors.Join(err, textErr)
		}
	} else {
		printCheck(s.g.Streams.Out, ui.New(s.g.Streams.Out, s.g.Host.Environ), rep, s.g.Dir)
	}
	if textErr != nil {
		return textErr
	}
	if !rep.OK {
		return cli.Exit(cli.ExitFailure)
	}
	return nil
}

// checkFailed writes the textfile of a check that could not run its
// phases (check not ok, incomplete for err) before returning err: a
// monitor reads the failure, not the last good run.
func (o *ReportOptions) checkFailed(s *session, err error) error {
	if o.Action != actionCheck {
		return err
	}
	rep := report.Build(state.New(s.cfg.Name, actionCheck), s.cfg.Provider(), nil, time.Now())
	rep.OK = false
	rep.Incomplete = []report.Reason{{Section: "talosc", Reason: err.Error()}}
	return errors.Join(err, o.writeTextfile(rep))
}

// pluginNames are the discovered plugins' names (their sections').
func (s *session) pluginNames() []string {
	names := make([]string, len(s.plugins))
	for i, p := range s.plugins {
		names[i] = p.Name
	}
	return names
}

func (o *ReportOptions) writeTextfile(rep *report.CheckReport) error {
	if o.Textfile == "" {
		return nil
	}
	return report.WriteTextfile(o.Textfile, rep)
}
