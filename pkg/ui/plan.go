package ui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/talosc/talosc/pkg/state"
)

// Plan writes the changes one phase (or plugin) would make, in the order
// given:
//
//	network:
//	  + create openstack:network/demo (mtu 1450)
//	  ~ update openstack:subnet/demo (dns 1.1.1.1 -> 9.9.9.9)
//	      --- running
//	      +++ wanted
//	  - delete openstack:port/demo-old
//	  ± replace proxmox:vm/demo-cp-01 (disk storage changed) [replaces the machine]
//
// A change that disturbs the running cluster ends with its class in
// brackets; one that disturbs nothing has none.
// An empty plan is the single line "network: no changes".
func (p *Printer) Plan(phase string, changes []state.Change) {
	if len(changes) == 0 {
		p.write(phase + ": no changes")
		return
	}
	var b strings.Builder
	b.WriteString(p.render(p.st.bold, phase+":") + "\n")
	for _, c := range changes {
		symbol, style := p.actionStyle(c.Action)
		line := fmt.Sprintf("%s %s %s/%s", symbol, c.Action, c.Kind, c.Name)
		if c.Detail != "" {
			line += " (" + c.Detail + ")"
		}
		line = p.render(style, line)
		if w := ClassWords(c.Disruption); w != "" {
			line += " " + p.render(p.st.warn, "["+w+"]")
		}
		b.WriteString("  " + line + "\n")
		p.writeDiff(&b, c.Diff)
	}
	p.write(b.String())
}

// actionStyle returns the plan symbol and style of an action.
func (p *Printer) actionStyle(a state.Action) (string, lipgloss.Style) {
	switch a {
	case state.ActionCreate:
		return "+", p.st.create
	case state.ActionUpdate:
		return "~", p.st.update
	case state.ActionDelete:
		return "-", p.st.del
	case state.ActionReplace:
		return "±", p.st.repl
	default:
		// A newer producer may use an action this build does not know;
		// show it rather than drop it.
		return "?", p.st.bold
	}
}

// writeDiff appends a unified diff indented under its change; blank lines
// stay empty so the output has no trailing blanks.
func (p *Printer) writeDiff(b *strings.Builder, diff string) {
	if diff == "" {
		return
	}
	for line := range strings.Lines(strings.TrimSuffix(diff, "\n")) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			b.WriteString("\n")
			continue
		}
		style := lipgloss.NewStyle()
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			style = p.st.bold
		case strings.HasPrefix(line, "+"):
			style = p.st.create
		case strings.HasPrefix(line, "-"):
			style = p.st.del
		case strings.HasPrefix(line, "@@"):
			style = p.st.header
		}
		b.WriteString("      " + p.render(style, line) + "\n")
	}
}

// Summary returns (it does not write) the one-line total of a whole run's
// plan, keyed by phase or plugin name:
//
//	Plan: 3 to create, 1 to update, 0 to delete.
//	Plan: 1 to create, 0 to update, 0 to delete, 2 to replace.
//	Nothing to do: the cluster matches cluster.yaml.
//
// The replace count appears only when there are replacements. The text is
// always plain, so callers can pass it to Info, a prompt or a log.
func (p *Printer) Summary(changes map[string][]state.Change) string {
	var create, update, del, repl, total int
	for _, cs := range changes {
		for _, c := range cs {
			total++
			switch c.Action {
			case state.ActionCreate:
				create++
			case state.ActionUpdate:
				update++
			case state.ActionDelete:
				del++
			case state.ActionReplace:
				repl++
			default: // unknown actions count towards "something to do" only
			}
		}
	}
	if total == 0 {
		return "Nothing to do: the cluster matches cluster.yaml."
	}
	s := fmt.Sprintf("Plan: %d to create, %d to update, %d to delete", create, update, del)
	if repl > 0 {
		s += fmt.Sprintf(", %d to replace", repl)
	}
	return s + "."
}
