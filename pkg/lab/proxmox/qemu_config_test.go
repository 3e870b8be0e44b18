package proxmox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// TestCidataISOFromGoProxmoxCloudInit attaches a NoCloud ISO the way
// go-proxmox builds one (go-diskfs, Joliet + Rock Ridge, label "cidata")
// and reads back the machine config the VM boots from.
func TestCidataISOFromGoProxmoxCloudInit(t *testing.T) {
	t.Parallel()
	srv := startLab(t, proxmox.Options{Storages: labStorages, TaskDurations: map[string]time.Duration{"imgcopy": 0, "qmconfig": 0, "imgdel": 0}})
	c, ctx, w := adminClient(t, srv), t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, opt("name", "demo-worker-01"), opt("scsi0", "local-lvm:4"), opt("boot", "order=scsi0"), opt("net0", "virtio,bridge=vmbr0")))
	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	userData := "version: v1alpha1\nmachine:\n  type: worker\n"
	metaData := "instance-id: demo-worker-01\nlocal-hostname: demo-worker-01\n"
	if err := vm.CloudInit(ctx, "ide3", userData, metaData, "", "", goproxmox.WithCloudInitStorage("local")); err != nil {
		t.Fatalf("CloudInit: %v", err)
	}
	volid, nc, err := srv.CidataISO(100)
	if err != nil {
		t.Fatalf("CidataISO: %v", err)
	}
	if volid != "local:iso/user-data-100.iso" || !nc.IsCidata() || string(nc.UserData()) != userData || string(nc.MetaData()) != metaData {
		t.Errorf("cidata %s: label %q user-data %q meta-data %q", volid, nc.Label, nc.UserData(), nc.MetaData())
	}
	if diff := cmp.Diff(map[string][]int{volid: {100}}, srv.CidataReferences()); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
	// Detach while stopped is immediate; the ISO then references nothing.
	w(vm.Config(ctx, opt("delete", "ide3")))
	if refs := srv.CidataReferences(); len(refs) != 0 {
		t.Errorf("after detach: %v", refs)
	}
	// go-proxmox's Delete removes the ISO it uploaded (the VM carries its tag).
	if err := vm.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	w(vm.Delete(ctx, &goproxmox.VirtualMachineDeleteOptions{Purge: true}))
	if _, ok := srv.Volume("pve1", volid); ok {
		t.Error("cidata ISO left behind")
	}
}

func TestVMConfigSemantics(t *testing.T) {
	t.Parallel()
	srv, c, events := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	expectEvents(t, events, proxmox.VMCreated)
	vm := node.VirtualMachineRef(100)

	for name, tc := range map[string]struct {
		opts []goproxmox.VirtualMachineOption
		want string
	}{
		"unknown key":      {[]goproxmox.VirtualMachineOption{opt("memroy", 1024)}, `"memroy":"property is not defined in schema`},
		"set and delete":   {[]goproxmox.VirtualMachineOption{opt("cores", 2), opt("delete", "cores")}, `"delete":"you can't use '-cores' and '-delete cores'`},
		"bad integer":      {[]goproxmox.VirtualMachineOption{opt("cores", "two")}, `"cores":"type check ('integer') failed`},
		"bad boot device":  {[]goproxmox.VirtualMachineOption{opt("boot", "order=scsi1")}, "invalid bootorder: device 'scsi1' does not exist"},
		"bad tag":          {[]goproxmox.VirtualMachineOption{opt("tags", "a b!")}, "invalid characters in tag"},
		"bad vlan":         {[]goproxmox.VirtualMachineOption{opt("net1", "virtio,bridge=vmbr0,tag=5000")}, "not in range 1 - 4094"},
		"arbitrary path":   {[]goproxmox.VirtualMachineOption{opt("scsi1", "/dev/sdb")}, "only root"},
		"wrong bios value": {[]goproxmox.VirtualMachineOption{opt("bios", "uefi")}, "does not have a value in the enumeration"},
	} {
		if _, err := vm.Config(ctx, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}

	// PUT config is synchronous; a NIC given without a MAC gets a new one,
	// as qemu-server does (talosc must always pass the MAC).
	if err := vm.ConfigSync(ctx, opt("net0", "virtio,bridge=vmbr0,firewall=1")); err != nil {
		t.Fatalf("ConfigSync: %v", err)
	}
	info, _ := srv.VM(100)
	if n := info.Config["net0"]; !strings.HasPrefix(n, "virtio=BC:24:11:") || strings.HasPrefix(n, "virtio=BC:24:11:00:00:01") {
		t.Errorf("net0 = %q, want a fresh BC:24:11 MAC", n)
	}
	// A stale digest is refused.
	if err := vm.ConfigSync(ctx, opt("name", "x"), opt("digest", "0000")); err == nil || !strings.Contains(err.Error(), "detected modified configuration") {
		t.Errorf("stale digest: err = %v", err)
	}

	// Running VM: CPU/memory/boot/agent go pending, name/tags/NIC/disks are
	// applied at once; revert drops a pending change; detaching an IDE
	// CD-ROM is pending until the restart (and drops it from the boot
	// order, itself a pending change).
	w(vm.Start(ctx))
	w(vm.Config(ctx, opt("cores", 8), opt("name", "renamed"), opt("tags", "taloscluster;taloscluster-pending-resize"), opt("delete", "ide2"), opt("scsi1", "local-lvm:1")))
	pending, err := vm.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]string{}
	for _, p := range *pending {
		switch {
		case p.Delete != nil:
			changes[p.Key] = "delete"
		case p.Pending != nil:
			changes[p.Key] = "pending"
		}
	}
	if diff := cmp.Diff(map[string]string{"boot": "pending", "cores": "pending", "ide2": "delete"}, changes); diff != "" {
		t.Errorf("pending changes (-want +got):\n%s", diff)
	}
	info, _ = srv.VM(100)
	if info.Config["name"] != "renamed" || info.Config["scsi1"] != "local-lvm:vm-100-disk-2,size=1G" || info.Config["tags"] != "taloscluster;taloscluster-pending-resize" {
		t.Errorf("hot changes not applied: %v", info.Config)
	}
	w(vm.Config(ctx, opt("revert", "cores")))
	if info, _ = srv.VM(100); len(info.Pending) != 1 || info.Pending["boot"] != "order=scsi0" || len(info.PendingDelete) != 1 {
		t.Errorf("after revert: pending %v, delete %v", info.Pending, info.PendingDelete)
	}
	// Detaching a disk makes it unused; deleting the unused entry frees it.
	w(vm.Config(ctx, opt("delete", "scsi1")))
	if info, _ = srv.VM(100); info.Config["unused0"] != "local-lvm:vm-100-disk-2" {
		t.Errorf("detached disk: %v", info.Config)
	}
	w(vm.Config(ctx, opt("delete", "unused0")))
	if vols := srv.Volumes("pve1", "local-lvm"); len(vols) != 2 {
		t.Errorf("volumes after freeing the unused disk: %+v", vols)
	}
}

func TestStartFailsLikeQEMU(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	// A VNet that is not applied yet is no bridge on the node.
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "demo")...))
	task, err := node.VirtualMachineRef(100).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = task.Wait(ctx, 2*time.Millisecond, 5*time.Second)
	if !goproxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "bridge 'demo' does not exist") {
		t.Errorf("start on a missing bridge: err = %v", err)
	}
	if info, _ := srv.VM(100); info.Running {
		t.Error("VM runs after a failed start")
	}
	// A missing storage fails the create task and removes the VM again.
	task, err = node.NewVirtualMachine(ctx, 101, opt("scsi0", "cephfs:4"))
	if err != nil {
		t.Fatal(err)
	}
	err = task.Wait(ctx, 2*time.Millisecond, 5*time.Second)
	if !goproxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "unable to create VM 101 - storage 'cephfs' does not support content-type 'images'") {
		t.Errorf("create on an iso storage: err = %v", err)
	}
	if _, ok := srv.VM(101); ok {
		t.Error("a failed create left the VM")
	}
	if _, err := node.NewVirtualMachine(ctx, 100, opt("name", "dup")); err == nil || !strings.Contains(err.Error(), "VM 100 already exists on node 'pve1'") {
		t.Errorf("duplicate VMID: err = %v", err)
	}
}
