package talosc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func writeExe(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestPhasePathPrefersTheFrontDoorsDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := filepath.Join(root, "libexec", "kubectl-talosc")
	writeExe(t, self)
	writeExe(t, filepath.Join(root, "libexec", "tc-image"))
	writeExe(t, filepath.Join(root, "path", "tc-image"))
	writeExe(t, filepath.Join(root, "path", "tc-net"))
	writeExe(t, filepath.Join(root, "rel", "tc-nodes"))
	if err := os.WriteFile(filepath.Join(root, "path", "tc-nodes"), nil, 0o644); err != nil { // not executable
		t.Fatal(err)
	}
	s := &session{g: &Globals{Host: Host{Self: self, Environ: []string{
		"PATH=rel" + string(os.PathListSeparator) + filepath.Join(root, "path"),
	}}}}
	for name, want := range map[string]string{
		"image": filepath.Join(root, "libexec", "tc-image"),
		"net":   filepath.Join(root, "path", "tc-net"),
	} {
		got, err := s.phasePath(name)
		if err != nil || got != want {
			t.Errorf("phasePath(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	// Found only through a relative PATH entry, or not executable: not found.
	_, err := s.phasePath("nodes")
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "tc-nodes not found") {
		t.Fatalf("phasePath(nodes) err = %v", err)
	}
}

func TestChildEnvOverridesInheritedTalosVariables(t *testing.T) {
	t.Parallel()
	s := &session{dir: "/clusters/prod", g: &Globals{Host: Host{Self: "/bin/kubectl-talosc", Environ: []string{
		"HOME=/root", "TALOSC_DIR=/elsewhere", "NO_COLOR=1", "TALOSC_PLUGIN_SECTIONS=stale=x",
	}}}}
	env := s.childEnv()
	h := Host{Environ: env}
	for k, want := range map[string]string{
		"HOME":                   "/root",
		"NO_COLOR":               "1",
		"TALOSC_DIR":             "/clusters/prod",
		"TALOSC_CONFIG":          "/clusters/prod/cluster.yaml",
		"TALOSC_PATH":            "/bin/kubectl-talosc",
		"TALOSC_STATE_API":       "talosc.dev/v1alpha1",
		"TALOSC_PLUGIN_SECTIONS": "",
	} {
		if got, ok := h.LookupEnv(k); !ok || got != want {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	for _, key := range []string{"TALOSC_DIR=", "TALOSC_PLUGIN_SECTIONS="} {
		n := 0
		for _, kv := range env {
			if strings.HasPrefix(kv, key) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s appears %d times", key, n)
		}
	}
}

// TestOpenWarnsOfTestKnobs: the front door warns on every run while a
// test-only knob is set (its phases then only report progress), and says
// nothing of it otherwise.
func TestOpenWarnsOfTestKnobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		environ []string
		want    bool
	}{
		{nil, false},
		{[]string{"TALOSC_TIME_SCALE="}, false},
		{[]string{"TALOSC_TIME_SCALE=0.05"}, true},
	} {
		s, _, _, errOut := genericiooptions.NewTestIOStreams()
		g := &Globals{Streams: s, Host: Host{Environ: append([]string{"NO_COLOR=1"}, tc.environ...)}, Dir: t.TempDir()}
		if _, err := g.open(t.Context(), loadNone); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(errOut.String(), "TALOSC_TIME_SCALE=0.05 is set: a test-only knob"); got != tc.want {
			t.Errorf("%v: warned %v, want %v; stderr:\n%s", tc.environ, got, tc.want, errOut)
		}
	}
}
