package proxmox_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

// without is inv less VM vmid and its volumes (its disks, and the cidata
// ISO named after host): what deleting exactly that machine leaves.
func without(inv labpx.Inventory, vmid int, host string) labpx.Inventory {
	inv.VMs = slices.DeleteFunc(slices.Clone(inv.VMs), func(v labpx.VMInfo) bool { return v.VMID == vmid })
	inv.Volumes = slices.DeleteFunc(slices.Clone(inv.Volumes), func(v labpx.VolumeInfo) bool {
		return v.VMID == vmid || strings.HasSuffix(v.VolID, "/"+proxmox.CidataFile("c", host))
	})
	for id, p := range inv.Pools {
		p.VMs = slices.DeleteFunc(slices.Clone(p.VMs), func(id int) bool { return id == vmid })
		inv.Pools[id] = p
	}
	return inv
}

func TestDeleteMachine_DeletesExactlyOneVMWithItsDisksFirewallAndCidata(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.createCluster(t)
	inv := l.inventory(t)
	w1, _ := inv.Find("c-worker-01")
	id := vmid(t, w1)
	before := l.srv.Inventory()
	if !slices.ContainsFunc(before.Volumes, func(v labpx.VolumeInfo) bool { return strings.HasSuffix(v.VolID, proxmox.CidataFile("c", w1.Hostname)) }) {
		t.Fatalf("no cidata ISO of %s before the delete: %+v", w1.Hostname, before.Volumes)
	}
	if vm, _ := l.srv.VM(id); len(vm.FirewallRules) == 0 || !vm.Running {
		t.Fatalf("%s before the delete: %+v", w1.Hostname, vm)
	}

	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DeleteMachine(t.Context(), w1, dry); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	want := []string{"delete proxmox:vm c-worker-01 (VMID " + w1.ID + " on " + w1.Zone + ", its disks, firewall and cidata ISO)"}
	if diff := cmp.Diff(want, summary(dry.Changes())); diff != "" {
		t.Errorf("dry-run changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, l.srv.Inventory()); diff != "" {
		t.Errorf("a dry run changed the lab (-before +after):\n%s", diff)
	}

	plan := &provider.Plan{}
	if err := l.cloud.DeleteMachine(t.Context(), w1, plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, summary(plan.Changes())); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(without(before, id, w1.Hostname), l.srv.Inventory()); diff != "" {
		t.Errorf("the lab after deleting %s (-want +got):\n%s", w1.Hostname, diff)
	}
	var rules []any
	if err := l.api().Get(t.Context(), "/nodes/"+w1.Zone+"/qemu/"+w1.ID+"/firewall/rules", &rules); err == nil {
		t.Errorf("VM %s's firewall is still there: %v", w1.ID, rules)
	}
	if got := l.inventory(t).Hostnames(); slices.Contains(got, w1.Hostname) || len(got) != 4 {
		t.Errorf("inventory after the delete: %v", got)
	}

	// Deleting it again (the answer of the first run lost) is no change.
	l.srv.Recorder().Reset()
	again := &provider.Plan{}
	if err := l.cloud.DeleteMachine(t.Context(), w1, again); err != nil || len(again.Changes()) != 0 {
		t.Errorf("second delete: %v, changes %v", err, summary(again.Changes()))
	}
	l.noMutations(t)
}

func TestDeleteMachine_VMGoneLeavesOnlyItsCidata(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.createCluster(t)
	w2, _ := l.inventory(t).Find("c-worker-02")
	// Someone stopped and deleted the VM by hand; its cidata ISO stayed.
	l.post(t, "/nodes/"+w2.Zone+"/qemu/"+w2.ID+"/status/stop", nil)
	var upid goproxmox.UPID
	if err := l.api().Delete(t.Context(), "/nodes/"+w2.Zone+"/qemu/"+w2.ID, &upid); err != nil {
		t.Fatal(err)
	}
	if err := goproxmox.NewTask(upid, l.api()).Wait(t.Context(), 5*time.Millisecond, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	before := l.srv.Inventory()
	l.srv.Recorder().Reset()
	plan := &provider.Plan{}
	if err := l.cloud.DeleteMachine(t.Context(), w2, plan); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete proxmox:cidata c-worker-02 (delete local:iso/" + proxmox.CidataFile("c", w2.Hostname) + ")"}
	if diff := cmp.Diff(want, summary(plan.Changes())); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(without(before, vmid(t, w2), w2.Hostname), l.srv.Inventory()); diff != "" {
		t.Errorf("the lab after the delete (-want +got):\n%s", diff)
	}
}

func TestDeleteMachine_RefusesAVMItCannotProveOwned(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.createCluster(t)
	w1, _ := l.inventory(t).Find("c-worker-01")
	// Same name and every tag, outside the pool; a stale entry pointing at it.
	l.post(t, "/nodes/pve1/qemu", map[string]any{"vmid": 900, "name": w1.Hostname, "tags": "taloscluster;cluster_c;role_worker;pool_worker"})
	// In the pool, without the tags.
	l.post(t, "/nodes/pve2/qemu", map[string]any{"vmid": 901, "name": "c-worker-03", "pool": "taloscluster-c"})
	renamed := w1
	renamed.Hostname = "c-worker-09"
	before := l.srv.Inventory()
	l.srv.Recorder().Reset()
	for _, tc := range []struct {
		m    provider.Machine
		want string
	}{
		{
			provider.Machine{Hostname: w1.Hostname, ID: "900", Zone: "pve1"},
			"delete VM c-worker-01: refusing to delete VM c-worker-01 (VMID 900 on pve1): it is not a member of pool taloscluster-c carrying the tags taloscluster and cluster_c",
		},
		{
			provider.Machine{Hostname: "c-worker-03", ID: "901", Zone: "pve2"},
			"delete VM c-worker-03: refusing to delete VM c-worker-03 (VMID 901 on pve2): it is not a member of pool taloscluster-c carrying the tags taloscluster and cluster_c",
		},
		{renamed, "delete VM c-worker-09: refusing to delete VM " + w1.ID + ": it is named c-worker-01 now, not c-worker-09; rerun to read the inventory again"},
	} {
		plan := &provider.Plan{}
		err := l.cloud.DeleteMachine(t.Context(), tc.m, plan)
		if err == nil || err.Error() != tc.want || len(plan.Changes()) != 0 {
			t.Errorf("delete %+v: %v (changes %v)\nwant %s", tc.m, err, summary(plan.Changes()), tc.want)
		}
	}
	l.noMutations(t)
	if diff := cmp.Diff(before, l.srv.Inventory()); diff != "" {
		t.Errorf("a refusal changed the lab (-before +after):\n%s", diff)
	}
}

func TestDestroyMachines_StopsDeletesVMsISOsAndPool(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	inv := l.inventory(t)
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DestroyMachines(t.Context(), inv, dry); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if got := summary(dry.Changes()); len(got) != 6 || got[5] != "delete proxmox:pool taloscluster-c ()" {
		t.Errorf("dry-run changes:\n%s", strings.Join(got, "\n"))
	}
	// One VM is already stopped.
	l.post(t, "/nodes/"+machines[4].Zone+"/qemu/"+machines[4].ID+"/status/stop", nil)
	plan := &provider.Plan{}
	if err := l.cloud.DestroyMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(plan.Changes()), summary(dry.Changes()); !slices.Equal(got, want) {
		t.Errorf("changes\n%s\nwant the dry run's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if vms := l.srv.VMs(); len(vms) != 0 {
		t.Errorf("VMs left: %+v", vms)
	}
	if _, ok := l.srv.Pools()["taloscluster-c"]; ok {
		t.Error("pool left")
	}
	for _, node := range []string{"pve1", "pve2"} {
		for _, v := range l.srv.Volumes(node, "") {
			if v.Content != "iso" || strings.Contains(v.VolID, "cidata") {
				t.Errorf("%s: volume %s (%s) left", node, v.VolID, v.Content)
			}
		}
	}
	stops := 0
	for _, c := range l.srv.Recorder().Mutations() {
		if strings.HasSuffix(c.Path, "/status/stop") {
			stops++
		}
	}
	if stops != 1+4 { // the test's, then talosc's for the running VMs
		t.Errorf("talosc stopped %d VMs, want the 4 running ones", stops-1)
	}
	if inv := l.inventory(t); len(inv.Machines) != 0 {
		t.Errorf("inventory after destroy: %v", inv.Hostnames())
	}
}
