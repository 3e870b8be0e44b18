package talosc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// validateOutput refuses an -o value outside allowed.
func validateOutput(value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return cli.Usagef("--output %q: must be one of %v", value, allowed)
}

// renderPlan prints every section's changes, notes and errors on stderr,
// grouped by phase or plugin in run order, then a one-line summary. The view
// is rendered from the state document only. It returns how many changes
// the sections plan and the sections that could not look ("net failed",
// "argocd deferred").
func (s *session) renderPlan(doc *state.Document, dryRun bool) (changes int, incomplete []string) {
	all := map[string][]state.Change{}
	for _, name := range doc.Names() {
		sec, _, err := doc.Section(name)
		if err != nil {
			s.out.Warn("%v", err)
			continue
		}
		s.out.Header("%s (%s)", name, sec.Status)
		s.out.Plan(name, sec.Plan)
		all[name] = sec.Plan
		changes += len(sec.Plan)
		if sec.Status != state.StatusPlanned && sec.Status != state.StatusSucceeded {
			incomplete = append(incomplete, fmt.Sprintf("%s %s", name, sec.Status))
		}
		for _, m := range sec.Messages {
			s.out.Info("%s", m)
		}
		if sec.Error != nil {
			s.out.Warn("%s: %s", name, sec.Error.Message)
			for _, p := range sec.Error.Problems {
				s.out.Info("  %s", p)
			}
		}
	}
	summary := s.out.Summary(all)
	if len(incomplete) > 0 {
		// Never claim the cluster matches when some part could not look.
		summary = strings.TrimSuffix(summary, ".")
		if strings.HasPrefix(summary, "Nothing to do") {
			summary = "No changes found"
		}
		summary += "; incomplete: " + strings.Join(incomplete, ", ") + " (see above)."
	}
	if dryRun {
		summary = "[dry-run] " + summary
	}
	s.out.Info("%s", summary)
	if d := ui.DisruptionSummary(all); d != "" {
		s.out.Info("%s", d)
	}
	return changes, incomplete
}

// writeStructured writes v as JSON or YAML when output asks for one of them;
// done is false for "text", which the caller renders itself.
func writeStructured(w io.Writer, output string, v any) (done bool, err error) {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		return true, writeYAML(w, v)
	default:
		return false, nil
	}
}

// outputRunE is the RunE of a command with -o text|json|yaml: it checks the
// format, lets complete derive options from flags, then runs runF (tests) or
// run.
func outputRunE[O any](o *O, output *string, complete func(), runF func(context.Context, *O) error, run func(context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := validateOutput(*output, "text", "json", "yaml"); err != nil {
			return err
		}
		if complete != nil {
			complete()
		}
		if runF != nil {
			return runF(cmd.Context(), o)
		}
		return run(cmd.Context())
	}
}

// printDocument writes doc to stdout as JSON or YAML; "text" prints nothing
// (the human view went to stderr).
func (s *session) printDocument(doc *state.Document, output string) error {
	switch output {
	case "json":
		return state.Write(s.g.Streams.Out, doc)
	case "yaml":
		return writeYAML(s.g.Streams.Out, doc)
	default:
		return nil
	}
}

// writeYAML renders v as YAML through its JSON form, keeping the JSON field
// order.
func writeYAML(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return fmt.Errorf("encode yaml: %w", err)
	}
	plainStyle(&node)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return fmt.Errorf("encode yaml: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// decodeOutputs decodes a section's outputs into v; empty outputs leave v alone.
func decodeOutputs(sec state.Section, v any) error {
	if len(sec.Outputs) == 0 {
		return nil
	}
	if err := json.Unmarshal(sec.Outputs, v); err != nil {
		return fmt.Errorf("unexpected outputs: %w", err)
	}
	return nil
}

// plainStyle drops the JSON flow and quoting styles so the YAML reads as YAML.
func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}
