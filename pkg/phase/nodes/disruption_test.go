package nodes

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	roles := nodeRoles{"cp-01": config.RoleControlPlane, "cp-04": config.RoleControlPlane, "w-01": config.RoleWorker}
	tests := []struct {
		name     string
		change   state.Change
		up       bool
		want     state.Disruption
		wantNode string
	}{
		{"a class the producer set is kept", state.Change{Action: state.ActionUpdate, Kind: KindMachineConfig, Name: "cp-01", Disruption: state.DisruptionReboot}, true, state.DisruptionReboot, "cp-01"},
		{"replace", state.Change{Action: state.ActionReplace, Kind: "proxmox:vm", Name: "w-01"}, true, state.DisruptionReplace, "w-01"},
		{"a control plane's reset leaves etcd", state.Change{Action: state.ActionDelete, Kind: KindTalosNode, Name: "cp-04"}, true, state.DisruptionEtcdMembership, "cp-04"},
		{"a worker's reset removes it", state.Change{Action: state.ActionDelete, Kind: KindTalosNode, Name: "w-01"}, true, state.DisruptionRemove, "w-01"},
		{"an etcd member removed by id", state.Change{Action: state.ActionDelete, Kind: KindEtcdMember, Name: "cp-04"}, true, state.DisruptionEtcdMembership, "cp-04"},
		{"a server deleted", state.Change{Action: state.ActionDelete, Kind: "openstack:server", Name: "w-01"}, true, state.DisruptionRemove, "w-01"},
		{"a VM deleted", state.Change{Action: state.ActionDelete, Kind: "proxmox:vm", Name: "cp-04"}, true, state.DisruptionRemove, "cp-04"},
		{"a new control plane of a running cluster joins etcd", state.Change{Action: state.ActionCreate, Kind: "proxmox:vm", Name: "cp-04"}, true, state.DisruptionEtcdMembership, "cp-04"},
		{"a new control plane of a new cluster disturbs nothing", state.Change{Action: state.ActionCreate, Kind: "openstack:server", Name: "cp-01"}, false, state.DisruptionNone, "cp-01"},
		{"a new worker disturbs nothing", state.Change{Action: state.ActionCreate, Kind: "openstack:server", Name: "w-01"}, true, state.DisruptionNone, "w-01"},
		{"a firewall update disturbs nothing", state.Change{Action: state.ActionUpdate, Kind: "proxmox:firewall", Name: "w-01"}, true, state.DisruptionNone, "w-01"},
		{"a file is no node", state.Change{Action: state.ActionCreate, Kind: kindFile, Name: config.KubeconfigFile}, true, state.DisruptionNone, ""},
		{"a node set by its producer is kept", state.Change{Action: state.ActionUpdate, Kind: KindKubelet, Name: "worker/w-01", Node: "w-01", Disruption: state.DisruptionServiceRestart}, true, state.DisruptionServiceRestart, "w-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The machine kind of the provider whose change it is.
			machineKind := "proxmox:vm"
			if strings.HasPrefix(tt.change.Kind, "openstack:") {
				machineKind = "openstack:server"
			}
			got := classify(tt.change, machineKind, roles, tt.up)
			if got.Disruption != tt.want || got.Node != tt.wantNode {
				t.Errorf("classify(%+v) = %q on %q, want %q on %q", tt.change, got.Disruption, got.Node, tt.want, tt.wantNode)
			}
		})
	}
}

func TestApplyDisruption(t *testing.T) {
	t.Parallel()
	if got := applyDisruption(true); got != state.DisruptionReboot {
		t.Errorf("an apply the node restarts for = %q, want reboot", got)
	}
	if got := applyDisruption(false); got != state.DisruptionLiveApply {
		t.Errorf("an apply the node takes live = %q, want live-apply", got)
	}
}
