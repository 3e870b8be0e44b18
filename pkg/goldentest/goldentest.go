// Package goldentest compares test output with golden files. With
// UPDATE_GOLDEN set in the environment a differing (or missing) file is
// rewritten and the test still fails once, so an update is never silent.
package goldentest

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// EnvUpdate names the variable that makes Assert rewrite golden files.
const EnvUpdate = "UPDATE_GOLDEN"

// Assert compares got with the file at path.
func Assert(tb testing.TB, path string, got []byte) {
	tb.Helper()
	want, err := os.ReadFile(path)
	if os.Getenv(EnvUpdate) != "" {
		if err == nil && string(want) == string(got) {
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatalf("update golden %s: %v", path, err)
		}
		tb.Errorf("rewrote %s; run the tests again without %s", path, EnvUpdate)
		return
	}
	if err != nil {
		tb.Fatalf("read golden %s (run the tests with %s=1 to create it): %v", path, EnvUpdate, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s is stale (-file +got); run the tests with %s=1 to rewrite it:\n%s", path, EnvUpdate, diff)
	}
}
