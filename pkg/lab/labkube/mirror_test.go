package labkube

import "testing"

// TestKubeletChangeAfter: changes that pile up while a node's Node is being
// written sum up so that a boot is never lost to a live apply, and any
// other change replaces the one before (a knob-only change keeps it).
func TestKubeletChangeAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		first, next kubeletChange
		want        kubeletChange
	}{
		{"a boot stays a boot through an apply", kubeletStarted, kubeletApplied, kubeletStarted},
		{"knobs keep a boot", kubeletStarted, kubeletKept, kubeletStarted},
		{"knobs keep a stop", kubeletStopped, kubeletKept, kubeletStopped},
		{"a stop replaces a boot", kubeletStarted, kubeletStopped, kubeletStopped},
		{"a boot replaces a stop", kubeletStopped, kubeletStarted, kubeletStarted},
		{"a removal replaces an apply", kubeletApplied, kubeletRemoved, kubeletRemoved},
		{"an apply after knobs is an apply", kubeletKept, kubeletApplied, kubeletApplied},
	} {
		if got := tc.first.after(tc.next); got != tc.want {
			t.Errorf("%s: %d after %d = %d, want %d", tc.name, tc.first, tc.next, got, tc.want)
		}
	}
}
