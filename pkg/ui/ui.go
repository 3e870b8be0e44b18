// Package ui renders talosc's human output: section headers, info, action and
// warning lines, plans, summaries and tables. It is the only package that
// imports lipgloss, and it writes only to the writer it is given (in practice
// the command's stderr: stdout carries the state document).
//
// Styling is decided once, in New: text is styled only when the writer is a
// terminal and the environment allows colour, or when CLICOLOR_FORCE asks for
// it. Everything else, tests and pipes included, gets plain text.
package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"golang.org/x/term"

	"github.com/talosc/talosc/pkg/cli"
)

// Printer writes human output to one writer. It is safe for concurrent use:
// each call writes whole lines under a lock, so lines from concurrent
// goroutines never interleave.
type Printer struct {
	mu     sync.Mutex
	out    io.Writer // w itself, or a colorprofile writer around it when styled
	styled bool
	st     styles
}

// styles holds the lipgloss styles of a styled Printer.
type styles struct {
	header, dryRun, warn, bold lipgloss.Style
	create, update, del, repl  lipgloss.Style
}

func newStyles() styles {
	return styles{
		header: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Cyan),
		dryRun: lipgloss.NewStyle().Foreground(lipgloss.Yellow),
		warn:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Yellow),
		bold:   lipgloss.NewStyle().Bold(true),
		create: lipgloss.NewStyle().Foreground(lipgloss.Green),
		update: lipgloss.NewStyle().Foreground(lipgloss.Yellow),
		del:    lipgloss.NewStyle().Foreground(lipgloss.Red),
		repl:   lipgloss.NewStyle().Foreground(lipgloss.Magenta),
	}
}

// New returns a Printer writing to w. environ is the process environment in
// os.Environ form (the caller passes it, so tests control it).
//
// The rules, first match wins:
//   - NO_COLOR set to anything non-empty: plain (https://no-color.org);
//   - CLICOLOR_FORCE set and not "0": styled, even on a pipe;
//   - TERM=dumb or CLICOLOR=0: plain;
//   - w is not a terminal: plain;
//   - otherwise styled when colorprofile detects colour support.
//
// Colours are downsampled to what the terminal supports by a colorprofile
// writer.
func New(w io.Writer, environ []string) *Printer {
	p := &Printer{out: w}
	if profile, ok := detect(w, environ); ok {
		p.styled = true
		p.out = &colorprofile.Writer{Forward: w, Profile: profile}
		p.st = newStyles()
	}
	return p
}

// detect decides whether output to w is styled, and with which profile.
func detect(w io.Writer, environ []string) (colorprofile.Profile, bool) {
	if cli.Getenv(environ, "NO_COLOR") != "" {
		return colorprofile.NoTTY, false
	}
	if force := cli.Getenv(environ, "CLICOLOR_FORCE"); force != "" && force != "0" {
		return max(colorprofile.Detect(w, environ), colorprofile.ANSI), true
	}
	if cli.Getenv(environ, "TERM") == "dumb" || cli.Getenv(environ, "CLICOLOR") == "0" || !isTerminal(w) {
		return colorprofile.NoTTY, false
	}
	profile := colorprofile.Detect(w, environ)
	return profile, profile >= colorprofile.ANSI
}

// isTerminal reports whether w is a terminal. Only files have a descriptor;
// anything else (a buffer, a pipe wrapper) is not a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Styled reports whether the Printer writes ANSI styling.
func (p *Printer) Styled() bool { return p.styled }

// render applies s when the Printer is styled and returns text unchanged
// otherwise.
func (p *Printer) render(s lipgloss.Style, text string) string {
	if !p.styled || text == "" {
		return text
	}
	return s.Render(text)
}

// write writes text, adding the final newline when it lacks one.
func (p *Printer) write(text string) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.out, text) // human output: nothing useful to do on error
}

// Header writes a section header: "== image".
func (p *Printer) Header(format string, a ...any) {
	p.write(p.render(p.st.header, "== "+fmt.Sprintf(format, a...)))
}

// Info writes one informational line.
func (p *Printer) Info(format string, a ...any) {
	p.write(fmt.Sprintf(format, a...))
}

// Action writes a line describing something done, or in a dry run something
// that would be done, prefixed "[dry-run] ".
func (p *Printer) Action(dryRun bool, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if dryRun {
		msg = p.render(p.st.dryRun, "[dry-run]") + " " + msg
	}
	p.write(msg)
}

// Warn writes a warning line: "WARNING: ...".
func (p *Printer) Warn(format string, a ...any) {
	p.write(p.render(p.st.warn, "WARNING:") + " " + fmt.Sprintf(format, a...))
}
