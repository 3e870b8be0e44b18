package ui_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// FuzzPlan: whatever plan a state document carries (a plugin's, or a
// hand-edited file's), the plan renderer prints it without panicking, on
// a colour terminal and on a plain one.
func FuzzPlan(f *testing.F) {
	plan, err := os.ReadFile(filepath.Join("..", "state", "testdata", "plan.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(plan)
	f.Add([]byte(`{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","sections":{"nodes":{"status":"planned","plan":[{"action":"update","kind":"talos:machineconfig","name":"n","detail":"d","diff":"--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n\x1b[31m"}]}}}`))
	f.Add([]byte(`{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","sections":{"p":{"status":"planned","plan":[{"action":"frobnicate","kind":"","name":"\u202e"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := state.Parse(data)
		if err != nil || d == nil {
			return
		}
		all := map[string][]state.Change{}
		for _, name := range d.Names() {
			s, _, err := d.Section(name)
			if err != nil {
				continue
			}
			all[name] = s.Plan
			for _, environ := range [][]string{nil, {"TERM=xterm-256color", "CLICOLOR_FORCE=1"}} {
				var buf bytes.Buffer
				ui.New(&buf, environ).Plan(name, s.Plan)
			}
		}
		_ = ui.New(&bytes.Buffer{}, nil).Summary(all)
	})
}
