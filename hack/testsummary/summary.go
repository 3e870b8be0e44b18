package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

// event is one line of "go test -json" (cmd/test2json) output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	// ImportPath names the package of build-output and build-fail events.
	ImportPath string
	// Elapsed is, on a pass or fail event, how long the test or the
	// package ran, in seconds.
	Elapsed float64
}

// counts is the tally of a run.
type counts struct {
	passed, failed, skipped int
	// failedPackages counts packages that failed, build failures included.
	failedPackages int
}

// summarizer turns events into plain go test output and counts.
type summarizer struct {
	out     io.Writer
	verbose bool
	counts  counts
	// pending holds each running test's output until it passes (dropped),
	// is skipped (dropped) or fails (printed).
	pending map[string]*strings.Builder
	// times collects the scripts' and packages' wall times (-times).
	times *wallTimes
}

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testsummary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "print the output of every test, not only failing ones")
	times := fs.Bool("times", false, "before the counts, list each E2E script's and the slowest packages' wall times, slowest first")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "testsummary: unexpected arguments %q\n", fs.Args())
		return 2
	}
	s := &summarizer{out: stdout, verbose: *verbose, pending: map[string]*strings.Builder{}}
	if *times {
		s.times = &wallTimes{}
	}
	if err := s.read(stdin); err != nil {
		fmt.Fprintf(stderr, "testsummary: %v\n", err)
		return 1
	}
	if s.times != nil {
		s.times.print(stdout)
	}
	c := s.counts
	fmt.Fprintf(stdout, "tests: %d passed, %d failed, %d skipped\n", c.passed, c.failed, c.skipped)
	if c.failed > 0 || c.failedPackages > 0 {
		if c.failed == 0 {
			fmt.Fprintf(stdout, "packages: %d failed without a failing test (build or setup failure)\n", c.failedPackages)
		}
		return 1
	}
	return 0
}

// read consumes the whole stream.
func (s *summarizer) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
}

// line handles one input line.
func (s *summarizer) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		fmt.Fprint(s.out, line)
		return
	}
	if s.times != nil {
		s.times.add(e)
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		if s.verbose {
			fmt.Fprint(s.out, e.Output)
			return
		}
		if isFraming(e.Output) {
			return // plain go test does not print these either
		}
		b := s.pending[key]
		if b == nil {
			b = &strings.Builder{}
			s.pending[key] = b
		}
		b.WriteString(e.Output)
	case "pass":
		s.counts.passed++
		delete(s.pending, key)
	case "skip":
		s.counts.skipped++
		delete(s.pending, key)
	case "fail":
		s.counts.failed++
		if b := s.pending[key]; b != nil {
			fmt.Fprint(s.out, b.String())
		}
		delete(s.pending, key)
	default: // run, pause, cont, bench: nothing to count
	}
}

// packageEvent handles events that belong to a package, not a test.
func (s *summarizer) packageEvent(e event) {
	switch e.Action {
	case "output":
		// -json implies -v, whose package-level "PASS" plain go test omits.
		if s.verbose || e.Output != "PASS\n" {
			fmt.Fprint(s.out, e.Output)
		}
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "fail":
		s.counts.failedPackages++
	default: // start, pass, skip, build-fail (its package also reports fail)
	}
}

// isFraming reports whether a test output line is one of the "=== RUN",
// "=== PAUSE", "=== CONT" or "=== NAME" lines that -v adds.
func isFraming(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
