package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Problem is one invalid key or value.
type Problem struct {
	// File is the file the offending key came from, relative to the cluster
	// directory (cluster.yaml, secrets.yaml or another include file).
	File string `json:"file"`
	// Line is the 1-based line of the offending key or value, 0 when unknown.
	Line int `json:"line,omitempty"`
	// Path is the dotted key path (workers.gpu.count, network.dns[1]); empty
	// for problems about a whole file.
	Path string `json:"path,omitempty"`
	// Message is a complete sentence; it usually starts with Path.
	Message string `json:"message"`
}

// String renders the problem as "file[:line]: path: message". The path is left
// out when it is empty or when the message already starts with it.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
	}
	b.WriteString(": ")
	if p.Path != "" && !startsWithPath(p.Message, p.Path) {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

func startsWithPath(msg, path string) bool {
	rest, ok := strings.CutPrefix(msg, path)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == ':')
}

// Problems is every problem found in one load.
type Problems []Problem //nolint:errname // published API name, fixed before this package was written

// Error renders one problem per line.
func (p Problems) Error() string {
	return strings.Join(p.Lines(), "\n")
}

// Lines returns one line per problem, as Error prints them.
func (p Problems) Lines() []string {
	lines := make([]string, len(p))
	for i, pr := range p {
		lines[i] = pr.String()
	}
	return lines
}

// collector gathers problems and warnings during one load.
type collector struct {
	problems Problems
	warnings []string
}

func (c *collector) add(file string, line int, path, msg string) {
	c.problems = append(c.problems, Problem{File: oneLine(file), Line: line, Path: oneLine(path), Message: oneLine(msg)})
}

// oneLine keeps a problem on one line: yaml errors, keys and file names may
// contain line breaks.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

func (c *collector) addf(file string, line int, path, format string, args ...any) {
	c.add(file, line, path, fmt.Sprintf(format, args...))
}

func (c *collector) warnf(format string, args ...any) {
	c.warnings = append(c.warnings, oneLine(fmt.Sprintf(format, args...)))
}
