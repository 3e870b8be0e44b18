package proxmox_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// vmLab is a two-node cluster with a boot ISO on pve1's local storage and
// a managed pool, as talosc leaves it before creating VMs.
func vmLab(t *testing.T) (*proxmox.Server, *goproxmox.Client, chan proxmox.Event) {
	t.Helper()
	srv := startLab(t, proxmox.Options{Storages: labStorages, Nodes: []proxmox.Node{{Name: "pve1"}, {Name: "pve2"}}})
	events := make(chan proxmox.Event, 64)
	srv.OnEvent(func(e proxmox.Event) { events <- e })
	c := adminClient(t, srv)
	path := filepath.Join(t.TempDir(), "talos.iso")
	if err := os.WriteFile(path, []byte("boot iso"), 0o600); err != nil {
		t.Fatal(err)
	}
	waiter(t)(c.NodeRef("pve1").StorageRef("local").UploadWithName("iso", path, "talos.iso"))
	if err := c.NewPool(t.Context(), "taloscluster-demo", "managed-by=taloscluster cluster=demo"); err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	return srv, c, events
}

// talosVMOptions are the qm parameters talosc's provider creates a node with.
func talosVMOptions(name, bridge string) []goproxmox.VirtualMachineOption {
	return []goproxmox.VirtualMachineOption{
		opt("name", name), opt("pool", "taloscluster-demo"), opt("description", "managed-by=taloscluster cluster=demo"),
		opt("tags", "taloscluster;cluster_demo;role_controlplane;pool_controlplane"), opt("cores", 2), opt("memory", 4096),
		opt("cpu", "host"), opt("ostype", "l26"), opt("machine", "q35"), opt("bios", "ovmf"),
		opt("efidisk0", "local-lvm:1,efitype=4m,pre-enrolled-keys=0"), opt("scsihw", "virtio-scsi-single"), opt("scsi0", "local-lvm:10"),
		opt("ide2", "local:iso/talos.iso,media=cdrom"), opt("net0", "virtio=BC:24:11:00:00:01,bridge="+bridge+",firewall=1,tag=20"),
		opt("agent", "enabled=1"), opt("onboot", 1), opt("boot", "order=scsi0;ide2"), opt("serial0", "socket"),
		opt("smbios1", "uuid=6f1d2a3c-1111-5222-8333-444455556666"),
	}
}

func expectEvents(t *testing.T, ch chan proxmox.Event, kinds ...proxmox.EventKind) {
	t.Helper()
	for _, k := range kinds {
		select {
		case e := <-ch:
			if e.Kind != k {
				t.Fatalf("event %+v, want %s", e, k)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event", k)
		}
	}
}

func TestVMLifecycleWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv, c, events := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vmid, err := cl.NextID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := c.NodeRef("pve1")
	create := w(node.NewVirtualMachine(ctx, vmid, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	// The UPID names the token; the status splits it into user and tokenid.
	if create.Type != "qmcreate" || create.User != "root@pam" || !strings.HasSuffix(string(create.UPID), ":qmcreate:100:"+proxmox.DefaultTokenID+":") {
		t.Errorf("create task: %s type %q user %q", create.UPID, create.Type, create.User)
	}
	expectEvents(t, events, proxmox.VMCreated)
	vm, err := node.VirtualMachine(ctx, vmid)
	if err != nil {
		t.Fatalf("VirtualMachine: %v", err)
	}
	cfg := vm.VirtualMachineConfig
	got := map[string]string{
		"name": cfg.Name, "tags": cfg.Tags, "memory": itoa(int(cfg.Memory)), "cores": itoa(*cfg.Cores),
		"scsi0": cfg.SCSIs["scsi0"], "efidisk0": cfg.EFIDisk0, "net0": cfg.Nets["net0"], "ide2": cfg.IDEs["ide2"], "agent": cfg.Agent,
		"boot": cfg.Boot, "status": vm.Status,
	}
	want := map[string]string{
		"name": "demo-controlplane-01", "tags": "cluster_demo;pool_controlplane;role_controlplane;taloscluster", "memory": "4096", "cores": "2",
		"scsi0": "local-lvm:vm-100-disk-1,size=10G", "efidisk0": "local-lvm:vm-100-disk-0,efitype=4m,pre-enrolled-keys=0,size=4M",
		"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,tag=20", "ide2": "local:iso/talos.iso,media=cdrom", "agent": "enabled=1",
		"boot": "order=scsi0;ide2", "status": "stopped",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created VM (-want +got):\n%s", diff)
	}
	if !bool(cfg.OnBoot) || cfg.VMGenID == nil {
		t.Errorf("onboot %v, vmgenid %v", cfg.OnBoot, cfg.VMGenID)
	}
	pool, err := c.Pool(ctx, "taloscluster-demo")
	if err != nil || len(pool.Members) != 1 || pool.Members[0].VMID != uint64(vmid) || pool.Comment != "managed-by=taloscluster cluster=demo" {
		t.Errorf("pool = %+v, %v", pool, err)
	}
	res, err := cl.Resources(ctx, "vm")
	if err != nil || len(res) != 1 || res[0].Pool != "taloscluster-demo" || res[0].Tags != cfg.Tags || res[0].MaxMem != 4<<30 || res[0].MaxDisk != 10<<30 {
		t.Errorf("vm resources = %+v, %v", res, err)
	}

	w(vm.Start(ctx))
	expectEvents(t, events, proxmox.VMStarted)
	if err := vm.Ping(ctx); err != nil || !vm.IsRunning() || vm.CPUs != 2 {
		t.Errorf("after start: running %v cpus %d (%v)", vm.IsRunning(), vm.CPUs, err)
	}
	if _, err := vm.Start(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second start: err = %v", err)
	}

	// The guest agent answers once the node has booted.
	if _, err := vm.AgentGetNetworkIFaces(ctx); err == nil || !strings.Contains(err.Error(), "QEMU guest agent is not running") {
		t.Errorf("agent before boot: err = %v", err)
	}
	if err := srv.SetGuestAddress(vmid, netip.MustParsePrefix("127.77.0.11/8")); err != nil {
		t.Fatal(err)
	}
	ifaces, err := vm.AgentGetNetworkIFaces(ctx)
	if err != nil || len(ifaces) != 1 || ifaces[0].HardwareAddress != "bc:24:11:00:00:01" || ifaces[0].IPAddresses[0].IPAddress != "127.77.0.11" || ifaces[0].IPAddresses[0].Prefix != 8 {
		t.Errorf("agent interfaces = %+v, %v", ifaces, err)
	}

	// Sizing on a running VM: cores and memory become pending.
	w(vm.Config(ctx, opt("cores", 4), opt("memory", 8192)))
	checkSizing(t, c, vmid, "4", "2")
	w(vm.ResizeDisk(ctx, "scsi0", "+2G"))
	if info, _ := srv.VM(vmid); info.Config["scsi0"] != "local-lvm:vm-100-disk-1,size=12G" {
		t.Errorf("after resize: scsi0 = %q", info.Config["scsi0"])
	}
	task, err := vm.ResizeDisk(ctx, "scsi0", "8G")
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); !goproxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "shrinking disks is not supported") {
		t.Errorf("shrink: err = %v", err)
	}

	// A Proxmox reboot restarts the VM process and applies pending changes.
	w(vm.Reboot(ctx))
	expectEvents(t, events, proxmox.VMStopped, proxmox.VMStarted)
	checkSizing(t, c, vmid, "4", "4")
	if info, _ := srv.VM(vmid); info.GuestAgent || len(info.Pending) != 0 {
		t.Errorf("after reboot: agent %v, pending %v", info.GuestAgent, info.Pending)
	}

	if _, err := vm.Delete(ctx, &goproxmox.VirtualMachineDeleteOptions{Purge: true}); err == nil || !strings.Contains(err.Error(), "is running - destroy failed") {
		t.Errorf("delete while running: err = %v", err)
	}
	w(vm.Shutdown(ctx))
	expectEvents(t, events, proxmox.VMStopped)
	if _, err := vm.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("shutdown when stopped: err = %v", err)
	}
	w(vm.Stop(ctx)) // stopping a stopped VM is fine
	w(vm.Delete(ctx, &goproxmox.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true}))
	expectEvents(t, events, proxmox.VMDeleted)
	if _, ok := srv.VM(vmid); ok {
		t.Error("VM still there after delete")
	}
	if vols := srv.Volumes("pve1", "local-lvm"); len(vols) != 0 {
		t.Errorf("disks left after delete: %+v", vols)
	}
	if p := srv.Pools()["taloscluster-demo"]; len(p.VMs) != 0 {
		t.Errorf("pool still lists %v", p.VMs)
	}
	if _, err := node.VirtualMachine(ctx, vmid); !goproxmox.IsNotFound(err) {
		t.Errorf("VirtualMachine after delete: err = %v, want not found", err)
	}
}

// checkSizing compares the pending view (GET config) and what runs
// (config?current=1) for cores, as talosc's drift check reads them.
func checkSizing(t *testing.T, c *goproxmox.Client, vmid int, wantConfig, wantCurrent string) {
	t.Helper()
	var pending, current map[string]any
	base := "/nodes/pve1/qemu/" + itoa(vmid) + "/config"
	if err := c.Get(t.Context(), base, &pending); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), base+"?current=1", &current); err != nil {
		t.Fatal(err)
	}
	if g, w := itoa(int(pending["cores"].(float64))), wantConfig; g != w {
		t.Errorf("config cores = %s, want %s", g, w)
	}
	if g, w := itoa(int(current["cores"].(float64))), wantCurrent; g != w {
		t.Errorf("current cores = %s, want %s", g, w)
	}
	if _, ok := current["memory"].(string); !ok {
		t.Errorf("memory is %T, want a string as PVE 9 sends it", current["memory"])
	}
}
