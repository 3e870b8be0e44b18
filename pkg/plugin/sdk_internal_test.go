package plugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHookCommandsFollowAllHooks keeps the subcommand table in lifecycle
// order: describe lists hooks in table order.
func TestHookCommandsFollowAllHooks(t *testing.T) {
	t.Parallel()
	var names []string
	for _, h := range (Spec{}).hookCommands() {
		if h.help == "" || h.implemented {
			t.Errorf("%s: help %q, implemented %t with no hooks", h.name, h.help, h.implemented)
		}
		names = append(names, h.name)
	}
	if diff := cmp.Diff(AllHooks(), names); diff != "" {
		t.Errorf("hook table mismatch (-AllHooks +table):\n%s", diff)
	}
}
