package nodes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The converge's step list, in order (reference §3.1): a step added,
// dropped or moved is a decision, and docs/architecture.md §4 lists it.
func TestStepsInOrder(t *testing.T) {
	t.Parallel()
	var got []string
	for _, s := range (&run{}).steps() {
		got = append(got, s.name)
	}
	want := []string{
		"validate", "identity", "discover", "versions", "uncordon", "scale-down",
		"move-endpoint", "apply", "upgrade-talos", "apply-after-upgrade", "upgrade-kubernetes",
		"compute", "addresses", "talosconfig", "bootstrap", "health",
		"reinstall", "apply-after-reinstall", "inventory", "reboot", "finalize",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
}
