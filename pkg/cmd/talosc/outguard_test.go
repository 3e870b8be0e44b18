package talosc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
)

// TestOutputFlagsNeverReplaceClusterFiles: plan --out and check --textfile
// aimed at the cluster's identity, client files or configuration, directly,
// through a symlinked directory, through a symlink or a hard link, exit 2
// and leave the file as it was (I-O1).
func TestOutputFlagsNeverReplaceClusterFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range clusterFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("original "+name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir()
	mustDo(t, os.Symlink(dir, filepath.Join(other, "via")))
	mustDo(t, os.Symlink(filepath.Join(dir, config.TalosSecretsFile), filepath.Join(other, "secrets-link")))
	mustDo(t, os.Link(filepath.Join(dir, config.KubeconfigFile), filepath.Join(other, "hard")))
	targets := []string{filepath.Join(other, "via", config.TalosSecretsFile), filepath.Join(other, "secrets-link"), filepath.Join(other, "hard")}
	for _, name := range clusterFiles {
		targets = append(targets, filepath.Join(dir, name))
	}
	for _, target := range targets {
		for _, args := range [][]string{{"plan", "--out", target}, {"check", "--textfile", target}} {
			s, _, _, errOut := genericiooptions.NewTestIOStreams()
			code := cli.Run(NewRoot(s), append([]string{"-C", dir}, args...), s)
			if code != cli.ExitUsage || !strings.Contains(errOut.String(), "that is the cluster's") {
				t.Errorf("%v: exit %d, want 2 naming the file; stderr %q", args, code, errOut)
			}
		}
	}
	for _, name := range clusterFiles {
		if data, _ := os.ReadFile(filepath.Join(dir, name)); string(data) != "original "+name {
			t.Errorf("%s was changed: %q", name, data)
		}
	}
	if err := refuseClusterFile(dir, "--out", filepath.Join(other, "plan.json")); err != nil {
		t.Errorf("a plan beside the cluster's files is refused: %v", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
