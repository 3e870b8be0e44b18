// Command testsummary reads "go test -json" output on stdin, prints it the
// way plain "go test" would (package result lines and build errors, plus the
// output of every failing test; everything with -v), and ends with one line:
//
//	tests: 212 passed, 1 failed, 3 skipped
//
// Subtests count as tests. It exits 1 when a test or a package failed
// (including a build failure), and 0 otherwise. Lines that are not JSON (for
// example "go: downloading" when stderr is merged) are passed through.
//
// With -times, each E2E script's wall time (the subtests of TestScripts and
// TestRealCloudScripts) and the slowest packages' are listed before the
// counts, slowest first.
//
//	go test -json ./... 2>&1 | go run ./hack/testsummary [-v] [-times]
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
