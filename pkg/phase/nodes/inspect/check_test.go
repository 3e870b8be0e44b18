package inspect

import (
	"testing"

	"github.com/talosc/talosc/pkg/report"
)

func TestComponentFix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c    report.Component
		want string
	}{
		{report.Component{Component: "talos", LatestPatch: "v1.13.9", Latest: "v1.14.1", PatchAvailable: true, MinorAvailable: true}, "set talos.version: v1.13.9 in cluster.yaml, then kubectl talosc plan and converge"},
		{report.Component{Component: "kubernetes", LatestPatch: "v1.35.4", Latest: "v1.37.0", MinorAvailable: true}, "raise kubernetes.version towards v1.37.0 in cluster.yaml (kubectl talosc plan shows the rollout), then converge"},
		{report.Component{Component: "talos", LatestPatch: "v1.14.1", Latest: "v1.14.1", UpToDate: true}, ""},
	}
	for _, tt := range tests {
		if got := componentFix(tt.c); got != tt.want {
			t.Errorf("componentFix(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestNodeFix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    report.Node
		want string
	}{
		{report.Node{Ready: true}, ""},
		{report.Node{Ready: true, Drift: true}, "kubectl talosc converge (rolls the pinned versions out)"},
		{report.Node{Ready: true, Cordoned: true}, "kubectl talosc converge (lifts the leftover cordon)"},
		{report.Node{Ready: true, Drift: true, Cordoned: true}, "kubectl talosc converge (rolls the pinned versions out, lifts the cordon)"},
		{report.Node{Cordoned: true}, "look at the node first: kubectl describe node w-01 (converge refuses to roll out onto an unhealthy cluster); then kubectl talosc converge (lifts the leftover cordon)"},
	}
	for _, tt := range tests {
		if got := nodeFix("w-01", tt.n); got != tt.want {
			t.Errorf("nodeFix(%+v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
