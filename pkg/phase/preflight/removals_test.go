package preflight_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/provider"
)

func cluster(cps, workers int) *config.Cluster {
	return &config.Cluster{
		Name:         "demo",
		ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: cps},
		Workers:      config.Pools{{Name: "worker", Count: workers}},
	}
}

func TestRemovals(t *testing.T) {
	t.Parallel()
	inv := &provider.Inventory{Machines: []provider.Machine{
		{Hostname: "demo-controlplane-01", Role: config.RoleControlPlane},
		{Hostname: "demo-controlplane-02", Role: config.RoleControlPlane},
		{Hostname: "demo-controlplane-03", Role: config.RoleControlPlane},
		{Hostname: "demo-worker-01"},
		{Hostname: "demo-worker-02"},
	}}
	nodes := []kube.Node{
		{Name: "demo-worker-01"},
		{Name: "metal-cp", Labels: map[string]string{preflight.ControlPlaneLabel: ""}}, // a control plane by its role label only
		{Name: "stray"},
	}
	got := preflight.Removals(cluster(1, 1), inv, nodes)
	want := []preflight.Removal{
		{Name: "demo-controlplane-02", ControlPlane: true},
		{Name: "demo-controlplane-03", ControlPlane: true},
		{Name: "demo-worker-02"},
		{Name: "metal-cp", ControlPlane: true},
		{Name: "stray"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("removals (-want +got):\n%s", d)
	}
}

func TestQuorumRefusal(t *testing.T) {
	t.Parallel()
	cp := []preflight.Removal{{Name: "demo-controlplane-03", ControlPlane: true}}
	worker := []preflight.Removal{{Name: "demo-worker-02"}}
	for _, tc := range []struct {
		count    int
		removals []preflight.Removal
		refused  bool
	}{
		{1, cp, false},
		{3, cp, false},
		{2, cp, true},
		{0, cp, true},
		{4, cp, true},
		{2, worker, false}, // no control plane leaves: nothing to refuse
	} {
		err := preflight.QuorumRefusal(tc.count, tc.removals)
		if (err != nil) != tc.refused {
			t.Errorf("count %d, %v: err = %v, want refused %v", tc.count, tc.removals, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "refusing to remove controlplane demo-controlplane-03: desired controlplane count") {
			t.Errorf("message: %v", err)
		}
	}
}
