package talosc

import (
	"testing"

	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/state"
)

func TestConfirmedByPlan(t *testing.T) {
	t.Parallel()
	del := func(kind, node string, d state.Disruption) planfile.Action {
		return planfile.Action{Section: "nodes", Action: state.ActionDelete, Kind: kind, Name: node, Node: node, Disruption: d}
	}
	saved := planfile.Document{Actions: []planfile.Action{
		del("talos:node", "demo-controlplane-04", state.DisruptionEtcdMembership),
		del("proxmox:vm", "demo-controlplane-04", state.DisruptionRemove),
		del("talos:node", "demo-worker-03", state.DisruptionRemove),
		del("proxmox:cidata", "demo-worker-01", state.DisruptionNone), // a boot ISO, no removal
		{Section: "nodes", Action: state.ActionUpdate, Kind: "kube:node", Name: "demo-worker-02", Node: "demo-worker-02", Disruption: state.DisruptionServiceRestart},
	}}
	tests := []struct {
		name  string
		asked []string
		ok    bool
	}{
		{"exactly the plan's removals, in any order", []string{"demo-worker-03", "demo-controlplane-04"}, true},
		{"one removal fewer than planned", []string{"demo-worker-03"}, false},
		{"a removal the plan lacks", []string{"demo-worker-03", "demo-controlplane-04", "demo-worker-02"}, false},
		{"a node whose boot ISO the plan deletes", []string{"demo-worker-03", "demo-controlplane-04", "demo-worker-01"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := confirmedByPlan(saved, tt.asked); (err == nil) != tt.ok {
				t.Errorf("confirmedByPlan(%v) = %v, want ok %t", tt.asked, err, tt.ok)
			}
		})
	}
}
