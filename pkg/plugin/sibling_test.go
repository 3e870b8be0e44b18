package plugin_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/plugin"
)

func TestSibling(t *testing.T) {
	beside, onPath := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(beside, "tc-nodes"), filepath.Join(onPath, "tc-nodes"), filepath.Join(onPath, "tc-net")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil { //nolint:gosec // an executable fixture
			t.Fatal(err)
		}
	}
	self := filepath.Join(beside, "tc-image")
	if got, err := plugin.Sibling("tc-nodes", self, onPath); err != nil || got != filepath.Join(beside, "tc-nodes") {
		t.Errorf("beside: %q, %v", got, err)
	}
	if got, err := plugin.Sibling("tc-net", self, onPath); err != nil || got != filepath.Join(onPath, "tc-net") {
		t.Errorf("on PATH: %q, %v", got, err)
	}
	t.Chdir(onPath) // tc-net is in "." now, which a PATH entry must not mean
	if _, err := plugin.Sibling("tc-net", "", "."); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a relative PATH entry is used: %v", err)
	}
}
