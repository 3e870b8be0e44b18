package proxmox_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// sdnStates reads one kind with pending=1 as talosc does: id → state.
func sdnStates(t *testing.T, c *goproxmox.Client, path, idKey string) map[string]any {
	t.Helper()
	var objs []map[string]any
	if err := c.Get(t.Context(), path+"?pending=1", &objs); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	out := map[string]any{}
	for _, o := range objs {
		out[o[idKey].(string)] = o["state"]
	}
	return out
}

func bridges(t *testing.T, c *goproxmox.Client, node string) map[string]string {
	t.Helper()
	var ifaces []map[string]any
	if err := c.Get(t.Context(), "/nodes/"+node+"/network?type=any_bridge", &ifaces); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, i := range ifaces {
		out[i["iface"].(string)] = i["type"].(string)
	}
	return out
}

func TestManagedSDNWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.NewSDNController(ctx, &goproxmox.SDNControllerOptions{Controller: "evpnctl", Type: "evpn", ASN: 65000, Peers: "127.0.10.1,127.0.10.2"}); err != nil {
		t.Fatalf("NewSDNController: %v", err)
	}
	// go-proxmox v0.9.0 sends exit nodes as "exit-nodes"; PVE's parameter
	// is "exitnodes", so the strict schema refuses it (use a raw POST).
	err = cl.NewSDNZone(ctx, &goproxmox.SDNZoneOptions{Name: "demo", Type: "evpn", Controller: "evpnctl", VRFVXLAN: 10000, ExitNodes: "pve1"})
	if !goproxmox.IsBadRequest(err) || !strings.Contains(err.Error(), `"exit-nodes"`) {
		t.Errorf("zone with go-proxmox's exit-nodes: err = %v", err)
	}
	zone := map[string]any{
		"zone": "demo", "type": "evpn", "controller": "evpnctl", "vrf-vxlan": 10000, "exitnodes": "pve2,pve1",
		"exitnodes-primary": "pve1", "advertise-subnets": 1, "disable-arp-nd-suppression": 1, "mtu": 1450,
	}
	if err := c.Post(ctx, "/cluster/sdn/zones", zone, nil); err != nil {
		t.Fatalf("create zone: %v", err)
	}
	if err := cl.NewSDNVNet(ctx, &goproxmox.VNetOptions{Name: "demo", Zone: "demo", Tag: 10001, Alias: "managed-by taloscluster cluster demo"}); err != nil {
		t.Fatalf("NewSDNVNet: %v", err)
	}
	vnet, err := cl.SDNVNet(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := vnet.NewSubnet(ctx, &goproxmox.SDNSubnetOptions{Subnet: "10.20.0.0/24", Gateway: "10.20.0.1", SNAT: true}); err != nil {
		t.Fatalf("NewSubnet: %v", err)
	}
	// VNI collisions and bad gateways are refused.
	if err := cl.NewSDNVNet(ctx, &goproxmox.VNetOptions{Name: "clash", Zone: "demo", Tag: 10000}); err == nil || !strings.Contains(err.Error(), "vxlan tag 10000 is already declared as vrf-vxlan in zone demo") {
		t.Errorf("VNI collision: err = %v", err)
	}
	if err := vnet.NewSubnet(ctx, &goproxmox.SDNSubnetOptions{Subnet: "10.30.0.0/24", Gateway: "10.20.0.1"}); !goproxmox.IsBadRequest(err) {
		t.Errorf("gateway outside the subnet: err = %v", err)
	}

	// Staged, not applied: everything is "new" and no node has the bridge.
	wantNew := map[string]any{"demo": "new"}
	if diff := cmp.Diff(wantNew, sdnStates(t, c, "/cluster/sdn/zones", "zone")); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
	var z map[string]any
	if err := c.Get(ctx, "/cluster/sdn/zones/demo?pending=1", &z); err != nil {
		t.Fatal(err)
	}
	pending, _ := z["pending"].(map[string]any)
	if z["type"] != "evpn" || z["controller"] != nil || pending["controller"] != "evpnctl" || pending["vrf-vxlan"] != 10000.0 || pending["exitnodes"] != "pve1,pve2" {
		t.Errorf("pending zone = %v", z)
	}
	if _, ok := bridges(t, c, "pve1")["demo"]; ok {
		t.Error("VNet bridge exists before apply")
	}
	task := w(cl.SDNApply(ctx))
	if task.Type != "reloadnetworkall" {
		t.Errorf("apply task type %q", task.Type)
	}
	if diff := cmp.Diff(map[string]any{"demo": nil}, sdnStates(t, c, "/cluster/sdn/vnets", "vnet")); diff != "" {
		t.Errorf("vnets after apply (-want +got):\n%s", diff)
	}
	for _, n := range []string{"pve1", "pve2"} {
		if diff := cmp.Diff(map[string]string{"vmbr0": "bridge", "demo": "vnet"}, bridges(t, c, n)); diff != "" {
			t.Errorf("%s bridges (-want +got):\n%s", n, diff)
		}
	}
	subnets, err := vnet.Subnets(ctx)
	if err != nil || len(subnets) != 1 || subnets[0].ID != "demo-10.20.0.0-24" || subnets[0].CIDR != "10.20.0.0/24" || subnets[0].SNAT != 1 || subnets[0].Gateway != "10.20.0.1" {
		t.Errorf("subnets = %+v, %v", subnets, err)
	}
	zones, err := cl.SDNZones(ctx)
	if err != nil || len(zones) != 1 || zones[0].MTU != 1450 || zones[0].Type != "evpn" {
		t.Errorf("SDNZones = %+v, %v", zones, err)
	}
	// A VM on the VNet starts now.
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "demo")...))
	w(node.VirtualMachineRef(100).Start(ctx))

	// Other administrators' pending changes, which talosc must refuse to
	// commit: a new zone, a changed shared controller, a deleted subnet.
	mustStage(t, srv.StageSDN(proxmox.SDNZones, "other", map[string]string{"type": "simple"}))
	mustStage(t, srv.StageSDN(proxmox.SDNControllers, "evpnctl", map[string]string{"type": "evpn", "asn": "65001", "peers": "127.0.10.1,127.0.10.2"}))
	mustStage(t, srv.UnstageSDN(proxmox.SDNSubnets, "demo-10.20.0.0-24"))
	if diff := cmp.Diff(map[string]any{"demo": nil, "other": "new"}, sdnStates(t, c, "/cluster/sdn/zones", "zone")); diff != "" {
		t.Errorf("zones with foreign changes (-want +got):\n%s", diff)
	}
	var ctls []map[string]any
	if err := c.Get(ctx, "/cluster/sdn/controllers?pending=1", &ctls); err != nil {
		t.Fatal(err)
	}
	if len(ctls) != 1 || ctls[0]["state"] != "changed" || ctls[0]["asn"] != 65000.0 || ctls[0]["pending"].(map[string]any)["asn"] != 65001.0 {
		t.Errorf("controller = %v", ctls)
	}
	if diff := cmp.Diff(map[string]any{"demo-10.20.0.0-24": "deleted"}, sdnStates(t, c, "/cluster/sdn/vnets/demo/subnets", "subnet")); diff != "" {
		t.Errorf("subnets (-want +got):\n%s", diff)
	}
	// Deleting a zone that a VNet uses is refused.
	if err := cl.DeleteSDNZone(ctx, "demo"); err == nil || !strings.Contains(err.Error(), "vnet 'demo' is using it") {
		t.Errorf("delete zone in use: err = %v", err)
	}
	// PVE checks SDN.Use on /sdn/zones/<zone>/<vnet>[/<tag>]: an ACL on
	// /sdn/vnets/<vnet> (talosc's preflight table names that path) grants
	// nothing for a NIC.
	acl := []proxmox.ACL{
		{Path: "/", Privs: []string{"Pool.Allocate"}},
		{Path: "/vms", Privs: []string{"VM.Allocate"}},
		{Path: "/storage", Privs: []string{"Datastore.AllocateSpace", "Datastore.Audit"}},
		{Path: "/sdn/vnets/demo", Privs: []string{"SDN.Use"}},
	}
	mustStage(t, srv.AddToken(proxmox.Token{ID: providerToken, Secret: providerSecret, ACL: acl}))
	tc := client(t, srv, providerToken, providerSecret)
	_, err = tc.NodeRef("pve1").NewVirtualMachine(ctx, 101, talosVMOptions("demo-controlplane-02", "demo")...)
	if !goproxmox.IsForbidden(err) || !strings.Contains(err.Error(), "(/sdn/zones/demo/demo/20, SDN.Use)") {
		t.Errorf("NIC on a VNet with SDN.Use on /sdn/vnets/demo: err = %v", err)
	}
	mustStage(t, srv.SetACL(providerToken, append(acl, proxmox.ACL{Path: "/sdn/zones/demo", Privs: []string{"SDN.Use"}})))
	w(tc.NodeRef("pve1").NewVirtualMachine(ctx, 101, talosVMOptions("demo-controlplane-02", "demo")...))

	res, err := cl.Resources(ctx, "sdn")
	if err != nil || len(res) != 2 || res[0].ID != "sdn/pve1/demo" {
		t.Errorf("sdn resources = %+v, %v", res, err)
	}
}

func mustStage(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
