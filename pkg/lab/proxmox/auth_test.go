package proxmox_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

const (
	providerToken  = "taloscluster@pve!provider"
	providerSecret = "0b7e4c1d-2f3a-4b5c-8d6e-7f8091a2b3c4"
)

// preflightACL grants exactly talosc's documented preflight table (bridge
// networking, compute node pve1).
func preflightACL() []proxmox.ACL {
	vm := []string{"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.GuestAgent.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"}
	return []proxmox.ACL{
		{Path: "/", Privs: []string{"Pool.Allocate"}},
		{Path: "/storage/local", Privs: []string{"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.Audit"}},
		{Path: "/storage/local-lvm", Privs: []string{"Datastore.AllocateSpace", "Datastore.Audit"}},
		{Path: "/vms", Privs: vm},
		{Path: "/sdn/zones/localnetwork", Privs: []string{"SDN.Use"}},
		{Path: "/nodes/pve1", Privs: []string{"Sys.Audit", "Sys.AccessNetwork"}},
	}
}

func TestPermissionsAndPrivilegeChecks(t *testing.T) {
	t.Parallel()
	srv, _, _ := vmLab(t)
	if err := srv.AddToken(proxmox.Token{ID: providerToken, Secret: providerSecret, ACL: preflightACL()}); err != nil {
		t.Fatal(err)
	}
	c, ctx, w := client(t, srv, providerToken, providerSecret), t.Context(), waiter(t)

	perms, err := c.Permissions(ctx, nil)
	if err != nil {
		t.Fatalf("Permissions: %v", err)
	}
	// Pool.Allocate on "/" propagates, so every path PVE evaluates shows it.
	want := []string{"/", "/access", "/access/groups", "/mapping", "/nodes", "/nodes/pve1", "/pool", "/sdn", "/sdn/zones/localnetwork", "/storage", "/storage/local", "/storage/local-lvm", "/vms"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(perms))); diff != "" {
		t.Errorf("permission paths (-want +got):\n%s", diff)
	}
	if !bool(perms["/pool"]["Pool.Allocate"]) || len(perms["/vms"]) != 11 {
		t.Errorf("/pool = %v, /vms has %d privileges", perms["/pool"], len(perms["/vms"]))
	}
	one, err := c.Permissions(ctx, &goproxmox.PermissionsOptions{Path: "/vms/100"})
	if err != nil || len(one) != 1 || !bool(one["/vms/100"]["VM.PowerMgmt"]) {
		t.Errorf("effective on /vms/100 = %v, %v", one, err)
	}
	none, err := c.Permissions(ctx, &goproxmox.PermissionsOptions{Path: "/nodes/pve2"})
	if err != nil || len(none["/nodes/pve2"]) != 1 || !bool(none["/nodes/pve2"]["Pool.Allocate"]) {
		t.Errorf("effective on /nodes/pve2 = %v, %v", none, err)
	}

	// Exactly the preflight table is enough for what the provider does.
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	w(node.VirtualMachineRef(100).Start(ctx))
	w(node.VirtualMachineRef(100).Config(ctx, opt("cores", 4), opt("tags", "taloscluster")))

	// Without Sys.AccessNetwork on the node, download-url is refused.
	_, err = c.NodeRef("pve2").StorageRef("local").DownloadURL(ctx, "iso", "x.iso", "http://127.0.0.1:1/x.iso")
	if !goproxmox.IsForbidden(err) || !strings.Contains(err.Error(), "Permission check failed (/nodes/pve2, Sys.AccessNetwork)") {
		t.Errorf("download-url on pve2: err = %v", err)
	}
	// The table grants nothing but Pool.Allocate on "/": what PVE guards
	// with Sys.Audit on "/" (the datacenter firewall switch, the cluster
	// status with the node IPs) is out of reach. go-proxmox's Cluster()
	// swallows that 403.
	for _, path := range []string{"/cluster/firewall/options", "/cluster/status"} {
		var out any
		if err := c.Get(ctx, path, &out); !goproxmox.IsForbidden(err) || !strings.Contains(err.Error(), "(/, Sys.Audit)") {
			t.Errorf("GET %s with the preflight table: err = %v, want 403", path, err)
		}
	}
	// Managed SDN needs SDN.Allocate on /sdn.
	cl, _ := c.Cluster(ctx)
	if _, err := cl.SDNApply(ctx); !goproxmox.IsForbidden(err) {
		t.Errorf("SDN apply: err = %v, want 403", err)
	}
	// A deeper ACL replaces what /vms grants.
	acl := append(preflightACL(), proxmox.ACL{Path: "/vms/100", Privs: []string{"VM.Audit"}})
	if err := srv.SetACL(providerToken, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := node.VirtualMachineRef(100).Stop(ctx); !goproxmox.IsForbidden(err) || !strings.Contains(err.Error(), "(/vms/100, VM.PowerMgmt)") {
		t.Errorf("stop with /vms/100 = VM.Audit: err = %v", err)
	}
	// A token that may not audit VMs sees none of them.
	if err := srv.AddToken(proxmox.Token{ID: "viewer@pve!ro", Secret: "s3cret", ACL: []proxmox.ACL{{Path: "/", Privs: []string{"Sys.Audit"}}}}); err != nil {
		t.Fatal(err)
	}
	viewer := client(t, srv, "viewer@pve!ro", "s3cret")
	vcl, err := viewer.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := vcl.Resources(ctx, "vm"); err != nil || len(res) != 0 {
		t.Errorf("viewer resources = %+v, %v", res, err)
	}
	if _, err := viewer.NodeRef("pve1").VirtualMachine(ctx, 100); !goproxmox.IsForbidden(err) {
		t.Errorf("viewer reads a VM: err = %v", err)
	}
	// Other users' tasks need Sys.Audit on the node: the viewer has it and
	// sees the provider's tasks; the admin's upload task is not theirs.
	if hist, err := viewer.NodeRef("pve1").Tasks(ctx, &goproxmox.NodeTasksOptions{TypeFilter: "qmcreate"}); err != nil || len(hist) != 1 {
		t.Errorf("viewer task index = %d tasks, %v", len(hist), err)
	}
}
