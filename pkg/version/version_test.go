package version_test

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/version"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/talosc/talosc", Version: v}}, true
		}
	}
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }

	tests := []struct {
		name   string
		linked string
		read   func() (*debug.BuildInfo, bool)
		want   string
	}{
		{"linker value wins", "v1.2.3", info("v9.9.9"), "v1.2.3"},
		{"linker value without build info", "v1.2.3-4-gabc-dirty", noInfo, "v1.2.3-4-gabc-dirty"},
		{"module version from go install", "", info("v0.4.0"), "v0.4.0"},
		{"checkout build says devel", "", info("(devel)"), "dev"},
		{"empty module version", "", info(""), "dev"},
		{"no build info", "", noInfo, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := version.Resolve(tt.linked, tt.read); got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.linked, got, tt.want)
			}
		})
	}
}

func TestVersion_NeverEmpty(t *testing.T) {
	t.Parallel()
	if got := version.Version(); got == "" {
		t.Error("Version() is empty")
	}
}

// TestVersion_LinkerFlag builds a program with the same -X flag the Makefile
// passes, so renaming the variable or the package breaks a test, not a release.
func TestVersion_LinkerFlag(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "printversion")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin,
		"-ldflags", "-X github.com/talosc/talosc/pkg/version.version=v7.7.7-test",
		"./testdata/printversion")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin).Output()
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != "v7.7.7-test" {
		t.Errorf("version = %q, want %q", got, "v7.7.7-test")
	}
}
