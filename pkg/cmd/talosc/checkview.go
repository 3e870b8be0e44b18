package talosc

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// checkRow is one finding in the check table and what fixes it.
type checkRow struct{ what, configured, observed, attention, fix string }

// printCheck is check's human view: a table of every finding, what
// needs attention marked, then the fix of each, why the check is
// incomplete, and the verdict as the last line (scripts read it).
func printCheck(w io.Writer, p *ui.Printer, rep *report.CheckReport, dir string) {
	fmt.Fprintf(w, "cluster: %s (%s)\n\n", rep.Cluster, rep.Provider)
	rows := checkRows(rep, dir)
	table := make([][]string, len(rows))
	for i, r := range rows {
		state := "ok"
		if r.attention != "" {
			state = r.attention
		}
		table[i] = dashes(r.what, r.configured, r.observed, state)
	}
	p.Table([]string{"WHAT", "CONFIGURED", "OBSERVED", "STATE"}, table)
	var fixes []checkRow
	for _, r := range rows {
		if r.attention != "" {
			fixes = append(fixes, r)
		}
	}
	if len(fixes) > 0 {
		fmt.Fprintln(w, "\nto fix:")
		for _, r := range fixes {
			fmt.Fprintf(w, "  %s: %s\n", r.what, orAsk(r.fix))
		}
	}
	if len(rep.Incomplete) > 0 {
		fmt.Fprintln(w, "\nincomplete (not looked at, never read as fine):")
		for _, r := range rep.Incomplete {
			fmt.Fprintf(w, "  %s: %s\n", r.Section, r.Reason)
		}
	}
	verdict := "everything is up to date"
	if !rep.OK {
		verdict = "needs attention"
	}
	fmt.Fprintf(w, "\ndetails: kubectl talosc check -C %s -o yaml\ncheck: %s\n", dir, verdict)
}

// checkRows are the phases' findings in run order, then a row per
// plugin and one for what converge would do.
func checkRows(rep *report.CheckReport, dir string) []checkRow {
	var rows []checkRow
	for _, name := range rep.Order {
		sec := rep.Sections[name]
		if name == sectionPlan {
			rows = append(rows, pendingRow(sec, dir))
			continue
		}
		var f report.Findings
		decoded := sec.Status == state.StatusSucceeded && len(sec.Report) > 0 && json.Unmarshal(sec.Report, &f) == nil
		switch {
		case decoded && len(f.Items) == 0 && f.OK && !isPlugin(rep, name):
			continue // a phase with nothing to report (image, net)
		case !decoded || len(f.Items) == 0:
			rows = append(rows, sectionRow(name, sec))
			continue
		}
		for _, it := range f.Items {
			rows = append(rows, checkRow{it.Name, it.Configured, it.Observed, it.Attention, it.Fix})
		}
	}
	return rows
}

// sectionRow is a section with no findings of its own (a plugin): its
// verdict.
func sectionRow(name string, sec report.Section) checkRow {
	r := checkRow{what: name, observed: string(sec.Status)}
	switch {
	case sec.Status != state.StatusSucceeded:
		r.attention = "did not report: " + notDoneReason(sec)
		r.fix = "kubectl talosc plugin " + name + " check -o yaml shows the whole error"
	case !report.SectionOK(sec.Report):
		r.attention = "its check is not ok"
		r.fix = "kubectl talosc plugin " + name + " check -o yaml says what; its converge usually fixes it"
	}
	return r
}

// pendingRow is what converge would do (check plans when the provider
// credentials load).
func pendingRow(sec report.Section, dir string) checkRow {
	r := checkRow{what: "pending changes"}
	var p planReport
	if sec.Status != state.StatusSucceeded || json.Unmarshal(sec.Report, &p) != nil {
		r.attention = "not planned: " + notDoneReason(sec)
		return r
	}
	r.observed = fmt.Sprintf("%d action(s)", p.Pending)
	if p.Disruption != "" {
		r.observed += "; " + p.Disruption
	}
	if !p.OK {
		r.attention = "cluster.yaml is not what runs"
		r.fix = fmt.Sprintf("kubectl talosc plan -C %s, then converge", dir)
	}
	return r
}

// isPlugin reports a plugin's section.
func isPlugin(rep *report.CheckReport, name string) bool {
	return slices.ContainsFunc(rep.Plugins, func(p report.Plugin) bool { return p.Name == name })
}

func notDoneReason(sec report.Section) string {
	if sec.Error != "" {
		return sec.Error
	}
	return string(sec.Status)
}

func orAsk(fix string) string {
	if fix == "" {
		return "see the finding (kubectl talosc check -o yaml)"
	}
	return fix
}
