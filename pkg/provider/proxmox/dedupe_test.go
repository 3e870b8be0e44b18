package proxmox_test

import (
	"slices"
	"strings"
	"testing"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
)

// A second owned VM of a machine's name (a create of an earlier run
// applied late, under another VMID) is settled by talosc: when it is
// stopped and was never started, the inventory keeps the VM in use and
// the next ReconcileMachines deletes the other, saying so, leaving the
// cidata ISO the kept VM boots from; when both are in use (running, or
// started once), the inventory refuses, naming both.
func TestInventory_ASecondVMOfANameIsDeletedWhenNeverStarted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		started bool
	}{{"never started", false}, {"started once", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, twoNodes(), nil, labCluster{})
			machines, _ := l.createCluster(t)
			i := slices.IndexFunc(machines, func(m provider.Machine) bool { return m.Hostname == "c-controlplane-01" })
			cp1 := machines[i]
			node := cp1.Zone
			l.post(t, "/nodes/"+node+"/qemu", map[string]any{"vmid": 902, "name": cp1.Hostname, "pool": "taloscluster-c", "tags": "taloscluster;cluster_c;role_controlplane;pool_controlplane"})
			if tc.started {
				l.post(t, "/nodes/"+node+"/qemu/902/status/start", nil)
				l.post(t, "/nodes/"+node+"/qemu/902/status/stop", nil)
			}
			inv, err := l.cloud.Inventory(t.Context())
			if tc.started {
				want := "Proxmox VM c-controlplane-01: 2 owned resources of this name are in use (VMID " + cp1.ID + " on " + node + ", VMID 902 on " + node + "): talosc cannot tell which to keep"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("inventory: %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := inv.Find(cp1.Hostname); len(inv.Machines) != 5 || got.ID != cp1.ID {
				t.Errorf("inventory %+v, want 5 machines, %s as VMID %s", inv.Machines, cp1.Hostname, cp1.ID)
			}
			isos := l.srv.Volumes(node, "local")
			if err := l.cloud.ReconcileMachines(t.Context(), inv, &provider.Plan{}); err != nil {
				t.Fatal(err)
			}
			if vms := l.srv.VMs(); len(vms) != 5 || slices.ContainsFunc(vms, func(v labpx.VMInfo) bool { return v.VMID == 902 }) {
				t.Errorf("lab VMs %+v, want the 5 machines without VMID 902", vms)
			}
			if !strings.Contains(l.logs.String(), "VM c-controlplane-01: VMID 902 on "+node+" is a second VM of this name, stopped and never started (a create applied late): it is deleted") {
				t.Errorf("the delete was not said:\n%s", l.logs)
			}
			if after := l.srv.Volumes(node, "local"); !slices.Equal(after, isos) {
				t.Errorf("cidata ISOs %v, want those before, %v", after, isos)
			}
		})
	}
}
