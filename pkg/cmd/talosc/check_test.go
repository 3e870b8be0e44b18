package talosc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

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
