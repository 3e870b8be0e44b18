package talosc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/report/reporttest"
	"github.com/talosc/talosc/schema"
)

func TestCheckCommandFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		textfile string
		warning  time.Duration
		phase    []string
		code     int
	}{
		{args: nil, warning: 720 * time.Hour, phase: []string{"--expiry-warning", "720h0m0s"}},
		{args: []string{"--textfile", "/var/lib/node_exporter/talosc.prom", "--expiry-warning", "2160h"}, textfile: "/var/lib/node_exporter/talosc.prom", warning: 2160 * time.Hour, phase: []string{"--expiry-warning", "2160h0m0s"}},
		{args: []string{"--expiry-warning", "a month"}, code: 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var got *ReportOptions
			cmd := newReportCommand(&Globals{}, actionCheck, func(_ context.Context, o *ReportOptions) error { got = o; return nil })
			code, stderr := execute(t, cmd, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if tc.code != 0 {
				return
			}
			if got.Textfile != tc.textfile || got.ExpiryWarning != tc.warning || strings.Join(got.phaseArgs(), " ") != strings.Join(tc.phase, " ") {
				t.Errorf("textfile %q warning %v phase args %v", got.Textfile, got.ExpiryWarning, got.phaseArgs())
			}
		})
	}
	status := newReportCommand(&Globals{}, actionStatus, nil)
	if status.Flags().Lookup("textfile") != nil || (&ReportOptions{Action: actionStatus}).phaseArgs() != nil {
		t.Errorf("status has check's flags")
	}
}

func TestSchemaCheck(t *testing.T) {
	t.Parallel()
	s, _, out, _ := genericiooptions.NewTestIOStreams()
	root := NewRoot(s)
	root.SetArgs([]string{"schema", "check"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var v struct {
		ID         string         `json:"$id"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || out.String() != string(schema.Check()) {
		t.Fatalf("schema check printed %d bytes: %v", out.Len(), err)
	}
	for _, k := range []string{"apiVersion", "kind", "certificates", "orphans", "incomplete", "sections"} {
		if v.Properties[k] == nil {
			t.Errorf("the check schema lacks %s", k)
		}
	}
}

// A check that cannot run its phases still writes the textfile: not ok,
// incomplete for that reason (a monitor must not read the last good run).
func TestCheckTextfileWhenThePhasesCannotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _, _, _ := genericiooptions.NewTestIOStreams()
	g := &Globals{
		Streams: s,
		Host:    Host{Self: filepath.Join(dir, "kubectl-talosc"), Environ: []string{"PATH="}}, // no tc-image anywhere
		Dir:     dir,
		Load: func(string, config.LoadOptions) (*config.Cluster, error) {
			return &config.Cluster{Name: "demo", Dir: dir, Proxmox: &config.Proxmox{}}, nil
		},
	}
	prom := filepath.Join(dir, "talosc.prom")
	code, stderr := execute(t, newReportCommand(g, actionCheck, nil), "--textfile", prom)
	if code != 1 || !strings.Contains(stderr, "tc-image not found") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	f, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := reporttest.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if got[reporttest.Key("talosc_check_ok", "cluster", "demo")] != 0 || got[reporttest.Key("talosc_check_incomplete", "cluster", "demo")] != 1 {
		t.Errorf("textfile says ok: %v", got)
	}
	var reason bool
	for k := range got {
		reason = reason || strings.HasPrefix(k, "talosc_check_incomplete_reason{") && strings.Contains(k, `section="talosc"`) && strings.Contains(k, "tc-image not found")
	}
	if !reason {
		t.Errorf("no incomplete reason names the missing phase: %v", got)
	}
}
