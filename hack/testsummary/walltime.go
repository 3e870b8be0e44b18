package main

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
)

// scriptTests matches the tests that are E2E scripts: the subtests of
// TestScripts and TestRealCloudScripts (one per testscript file).
var scriptTests = regexp.MustCompile(`^Test\w*Scripts/[^/]+$`)

// topPackages is how many packages the wall-time list names.
const topPackages = 15

// walltime is a test's or a package's name and how long it ran.
type walltime struct {
	name    string
	seconds float64
}

// wallTimes collects the wall times of the scripts and of the packages
// from their pass and fail events (test2json's Elapsed: a parallel
// script's running time, not its wait for a free slot).
type wallTimes struct {
	scripts, packages []walltime
}

// add records e when it ends a script or a package.
func (w *wallTimes) add(e event) {
	if e.Action != "pass" && e.Action != "fail" {
		return
	}
	switch {
	case e.Test == "":
		w.packages = append(w.packages, walltime{e.Package, e.Elapsed})
	case scriptTests.MatchString(e.Test):
		w.scripts = append(w.scripts, walltime{e.Test, e.Elapsed})
	}
}

// print lists every script and the slowest packages, slowest first, so
// the scripts and packages that make CI long are the first lines read.
func (w *wallTimes) print(out io.Writer) {
	if len(w.scripts) > 0 {
		fmt.Fprintf(out, "E2E scripts, slowest first: %d, %.0fs in all\n", len(w.scripts), total(w.scripts))
		list(out, w.scripts, len(w.scripts))
	}
	if len(w.packages) > 0 {
		n := min(len(w.packages), topPackages)
		fmt.Fprintf(out, "packages, slowest first: %d of %d\n", n, len(w.packages))
		list(out, w.packages, n)
	}
}

// list prints the n longest of ts, longest first.
func list(out io.Writer, ts []walltime, n int) {
	slices.SortStableFunc(ts, func(a, b walltime) int { return cmp.Compare(b.seconds, a.seconds) })
	for _, t := range ts[:n] {
		fmt.Fprintf(out, "  %7.1fs  %s\n", t.seconds, t.name)
	}
}

// total is the sum of ts's times.
func total(ts []walltime) float64 {
	var s float64
	for _, t := range ts {
		s += t.seconds
	}
	return s
}
