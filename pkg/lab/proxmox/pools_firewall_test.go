package proxmox_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"
)

func TestPoolsWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	if err := c.NewPool(ctx, "taloscluster-demo", "x"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate pool: err = %v", err)
	}
	pools, err := c.Pools(ctx)
	if err != nil || len(pools) != 1 || pools[0].PoolID != "taloscluster-demo" || pools[0].Comment != "managed-by=taloscluster cluster=demo" {
		t.Errorf("Pools = %+v, %v", pools, err)
	}
	w(c.NodeRef("pve1").NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	p, err := c.Pool(ctx, "taloscluster-demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Members) != 1 || p.Members[0].ID != "qemu/100" || p.Members[0].Name != "demo-controlplane-01" {
		t.Errorf("members = %+v", p.Members)
	}
	if err := p.Delete(ctx); err == nil || !strings.Contains(err.Error(), "pool 'taloscluster-demo' is not empty") {
		t.Errorf("deleting a pool with members: err = %v", err)
	}
	if err := p.Update(ctx, &goproxmox.PoolUpdateOption{Comment: "managed-by=taloscluster cluster=other"}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	w(c.NodeRef("pve1").VirtualMachineRef(100).Delete(ctx, &goproxmox.VirtualMachineDeleteOptions{Purge: true}))
	// The deprecated /pools/{id} form answers too.
	old, err := p.GetDeprecated(ctx) //nolint:staticcheck // the deprecated endpoint is simulated too
	if err != nil || old.Comment != "managed-by=taloscluster cluster=other" || len(old.Members) != 0 {
		t.Errorf("GetDeprecated = %+v, %v", old, err)
	}
	if got := srv.Pools()["taloscluster-demo"]; len(got.VMs) != 0 {
		t.Errorf("pool = %+v", got)
	}
	if err := p.Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.Pool(ctx, "taloscluster-demo"); !goproxmox.IsNotFound(err) {
		t.Errorf("Pool after delete: err = %v, want not found", err)
	}
}

func TestFirewallWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh cluster has the datacenter firewall off.
	opts, err := cl.FirewallOptions(ctx)
	if err != nil || opts.Enable != 0 {
		t.Errorf("datacenter firewall = %+v, %v", opts, err)
	}
	if err := cl.FirewallOptionsUpdate(ctx, &goproxmox.FirewallClusterOptionUpdateOption{Enable: 1, PolicyIn: "DROP"}); err != nil {
		t.Fatal(err)
	}
	if opts, _ = cl.FirewallOptions(ctx); opts.Enable != 1 || opts.PolicyIn != "DROP" || !srv.DatacenterFirewall() {
		t.Errorf("after enabling: %+v", opts)
	}
	// go-proxmox omits enable=0 (omitempty); switching it off needs a raw PUT.
	if err := c.Put(ctx, "/cluster/firewall/options", map[string]any{"enable": 0}, nil); err != nil {
		t.Fatal(err)
	}
	if srv.DatacenterFirewall() {
		t.Error("datacenter firewall still on")
	}

	w(c.NodeRef("pve1").NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	vm := c.NodeRef("pve1").VirtualMachineRef(100)
	on := goproxmox.IntOrBool(true)
	if err := vm.FirewallOptionSet(ctx, &goproxmox.FirewallVirtualMachineOption{Enable: true, Dhcp: true, PolicyIn: "DROP", PolicyOut: "ACCEPT", Macfilter: &on}); err != nil {
		t.Fatalf("FirewallOptionSet: %v", err)
	}
	// go-proxmox v0.9.0's FirewallOptionGet decodes into a nil pointer and
	// always returns nil: read the options with a raw GET.
	if got, err := vm.FirewallOptionGet(ctx); got != nil || err != nil {
		t.Errorf("FirewallOptionGet = %+v, %v (go-proxmox fixed the gap?)", got, err)
	}
	var vmOpts map[string]any
	if err := c.Get(ctx, "/nodes/pve1/qemu/100/firewall/options", &vmOpts); err != nil {
		t.Fatal(err)
	}
	delete(vmOpts, "digest")
	if diff := cmp.Diff(map[string]any{"enable": 1.0, "dhcp": 1.0, "macfilter": 1.0, "policy_in": "DROP", "policy_out": "ACCEPT"}, vmOpts); diff != "" {
		t.Errorf("VM firewall options (-want +got):\n%s", diff)
	}

	// New rules go to the top; without enable they are disabled.
	for _, r := range []*goproxmox.FirewallRule{
		{Type: "in", Action: "ACCEPT", Proto: "icmp", Enable: 1, Comment: "taloscluster: icmp"},
		{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "50000", Source: "10.0.0.0/24", Enable: 1, Comment: "taloscluster: apid from cluster"},
		{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "22", Comment: "admin ssh"},
	} {
		if err := vm.NewFirewallRule(ctx, r); err != nil {
			t.Fatalf("NewFirewallRule: %v", err)
		}
	}
	rules, err := vm.FirewallRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, itoa(r.Pos)+" "+r.Comment+" "+itoa(r.Enable))
	}
	want := []string{"0 admin ssh 0", "1 taloscluster: apid from cluster 1", "2 taloscluster: icmp 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	// Update by position, then delete stale ones by descending position.
	r1 := vm.FirewallRule(1)
	if err := r1.Get(ctx); err != nil || r1.Dport != "50000" {
		t.Fatalf("rule 1 = %+v, %v", r1, err)
	}
	r1.Source = "10.0.1.0/24"
	if err := r1.Update(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pos := range []int{2, 0} {
		if err := vm.FirewallRule(pos).Delete(ctx); err != nil {
			t.Fatalf("delete rule %d: %v", pos, err)
		}
	}
	info, _ := srv.VM(100)
	if len(info.FirewallRules) != 1 || info.FirewallRules[0]["source"] != "10.0.1.0/24" {
		t.Errorf("rules left = %v", info.FirewallRules)
	}
	if err := vm.FirewallRule(5).Delete(ctx); err == nil || !strings.Contains(err.Error(), "no rule at position 5") {
		t.Errorf("delete missing rule: err = %v", err)
	}
	if err := vm.NewFirewallRule(ctx, &goproxmox.FirewallRule{Type: "in", Action: "ACCEPT", Dport: "22"}); !goproxmox.IsBadRequest(err) {
		t.Errorf("ports without a protocol: err = %v, want 400", err)
	}
}
