package proxmox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/inventory"
)

// TestSnapshotSeesEverything: an orphan ISO, a detached disk, an extra
// firewall rule and a second VM of the same name, each made through the
// Proxmox API, are each one line more in the whole-inventory diff, and
// the snapshot names no VMID.
func TestSnapshotSeesEverything(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	vm := node.VirtualMachineRef(100)
	if err := vm.NewFirewallRule(ctx, &goproxmox.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", Enable: 1, Comment: "taloscluster: icmp"}); err != nil {
		t.Fatal(err)
	}
	was := srv.Snapshot()
	if diff := inventory.Diff(was, srv.Snapshot()); diff != nil {
		t.Fatalf("two snapshots of one inventory differ: %q", diff)
	}
	if strings.Contains(was.String(), "100") {
		t.Errorf("the snapshot names the VMID:\n%s", was)
	}

	path := filepath.Join(t.TempDir(), "orphan.iso")
	if err := os.WriteFile(path, []byte("cidata"), 0o600); err != nil {
		t.Fatal(err)
	}
	w(node.StorageRef("local").UploadWithName("iso", path, "taloscluster-cidata-0123456789ab.iso"))
	if err := vm.NewFirewallRule(ctx, &goproxmox.FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "22", Enable: 1, Comment: "extra"}); err != nil {
		t.Fatal(err)
	}
	w(node.NewVirtualMachine(ctx, 101, goproxmox.VirtualMachineOption{Name: "name", Value: "demo-controlplane-01"}))
	w(vm.Config(ctx, goproxmox.VirtualMachineOption{Name: "delete", Value: "scsi0"})) // the disk stays, unused
	got := inventory.Diff(was, srv.Snapshot())
	for _, want := range []string{
		"+ volume local:iso/taloscluster-cidata-0123456789ab.iso node=pve1 content=iso size=6",
		"+ vm-firewall-rule demo-controlplane-01 rule=action:ACCEPT|comment:extra|dport:22|enable:1|proto:tcp|type:in",
		"+ vm demo-controlplane-01 node=pve1 config=name:demo-controlplane-01",
		"+ vm-firewall demo-controlplane-01",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the diff lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if !slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, "+ vm demo-controlplane-01 ") && strings.Contains(l, "unused0:local-lvm:vm-{demo-controlplane-01}-disk-")
	}) {
		t.Errorf("the detached disk is not in the diff:\n%s", strings.Join(got, "\n"))
	}
	if diff := cmp.Diff(got, inventory.Diff(inventory.Parse(was.String()), inventory.Parse(srv.Snapshot().String()))); diff != "" {
		t.Errorf("a snapshot read back from its text diffs otherwise (-direct +parsed):\n%s", diff)
	}
}
