package proxmox_test

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

func TestReconcileMachines_SteadyStateThenSecurityChange(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	inv := l.inventory(t)
	l.srv.Recorder().Reset()
	plan := &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if len(plan.Changes()) != 0 {
		t.Errorf("steady state changes: %v", summary(plan.Changes()))
	}

	// Someone opens ssh on a worker and stops it; the kubernetes rule
	// moves to another network.
	w1 := machines[3]
	fw := "/nodes/" + w1.Zone + "/qemu/" + w1.ID + "/firewall/rules"
	l.post(t, fw, map[string]any{"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "22", "enable": 1, "comment": "ssh"})
	l.post(t, "/nodes/"+w1.Zone+"/qemu/"+w1.ID+"/status/stop", nil)
	l.cfg.Security[0].Hosts = []config.SecurityHost{{Label: "office", CIDR: netip.MustParsePrefix("10.1.0.0/16")}}
	inv = l.inventory(t)
	l.srv.Recorder().Reset()
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, dry); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	plan = &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	got := summary(plan.Changes())
	if want := summary(dry.Changes()); !slices.Equal(got, want) {
		t.Errorf("changes\n%s\nwant the dry run's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) != 6 || !slices.Contains(got, "update proxmox:firewall c-worker-01 (1 rules added, 1 deleted)") || !slices.Contains(got, "update proxmox:vm c-worker-01 (start the stopped VM)") {
		t.Errorf("changes:\n%s", strings.Join(got, "\n"))
	}
	for _, m := range machines {
		vm, _ := l.srv.VM(vmid(t, m))
		checkFirewall(t, vm, []string{"icmp", "tcp/80 from anywhere", "tcp/443 from anywhere", "tcp/6443 from 10.1.0.0/16", "tcp from 127.20.0.0/24", "udp from 127.20.0.0/24"})
		if !vm.Running {
			t.Errorf("%s is not running", m.Hostname)
		}
		if m.Hostname == w1.Hostname && !slices.ContainsFunc(vm.FirewallRules, func(r map[string]string) bool { return r["dport"] == "22" && r["comment"] == "ssh" }) {
			t.Errorf("the foreign ssh rule is gone: %v", vm.FirewallRules)
		}
	}
	// Per VM, the rule is added before the stale one is deleted.
	for _, m := range machines {
		path := "/api2/json/nodes/" + m.Zone + "/qemu/" + m.ID + "/firewall/rules"
		var order []string
		for _, c := range l.srv.Recorder().Mutations() {
			if strings.HasPrefix(c.Path, path) {
				order = append(order, c.Method)
			}
		}
		if !slices.Equal(order, []string{"POST", "DELETE"}) {
			t.Errorf("%s firewall rule calls %v, want POST then DELETE", m.Hostname, order)
		}
	}
	if !strings.Contains(l.logs.String(), "VM c-worker-01 firewall rule") || !strings.Contains(l.logs.String(), "is not talosc's: kept") {
		t.Errorf("foreign rule not reported: %s", l.logs)
	}

	inv = l.inventory(t)
	l.srv.Recorder().Reset()
	plan = &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
}

func TestValidateMachines_RefusesWhatProxmoxCannotChange(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.createCluster(t)
	inv := l.inventory(t)
	desired := l.cfg.Hostnames()
	l.srv.Recorder().Reset()
	if err := l.cloud.ValidateMachines(t.Context(), desired, inv); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	l.cfg.Workers[0].Disk = 40 // growing is fine
	if err := l.cloud.ValidateMachines(t.Context(), desired, inv); err != nil {
		t.Fatalf("disk grow: %v", err)
	}
	l.cfg.ControlPlane.Disk = 10
	l.cfg.Workers[0].Node = "pve2"
	l.cfg.Proxmox.Storage = "fast"
	l.cfg.Proxmox.Network.Cluster.Bridge = "vmbr9"
	err := l.cloud.ValidateMachines(t.Context(), desired, inv)
	if err == nil {
		t.Fatal("no refusal")
	}
	for _, want := range []string{
		"controlplane.disk changed from 20 to 10 for existing VM(s) c-controlplane-01, c-controlplane-02, c-controlplane-03; Proxmox disks only grow: revert controlplane.disk or recreate those machines",
		"workers.worker.node changed from pve1 to pve2 for existing VM(s) c-worker-01, c-worker-02; talosc never moves an existing VM to another node: revert workers.worker.node or recreate those machines",
		"proxmox.storage changed from local-lvm to fast for existing VM(s) c-controlplane-01, c-controlplane-02, c-controlplane-03, c-worker-01, c-worker-02;",
		"proxmox.network.cluster changed from vmbr0 to vmbr9 for existing VM(s) c-controlplane-01,",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q:\n%v", want, err)
		}
	}
	l.noMutations(t)
}

func TestFinalizeMachines_DetachesAndDeletesCidata(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	inv := l.inventory(t)
	plan := &provider.Plan{DryRun: true}
	if err := l.cloud.FinalizeMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if len(plan.Changes()) != 5 {
		t.Errorf("dry-run changes %v", summary(plan.Changes()))
	}
	plan = &provider.Plan{}
	if err := l.cloud.FinalizeMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	want := "delete proxmox:cidata c-worker-02 (detach ide2, ide3 and delete local:iso/" + proxmox.CidataFile("c", "c-worker-02") + ")"
	if got := summary(plan.Changes()); len(got) != 5 || !slices.Contains(got, want) {
		t.Errorf("changes %v, want 5 like %q", got, want)
	}
	if refs := l.srv.CidataReferences(); len(refs) != 0 {
		t.Errorf("cidata still referenced: %v", refs)
	}
	for _, vm := range l.srv.VMs() {
		next := maps.Clone(vm.Config)
		maps.Copy(next, vm.Pending)
		for _, k := range vm.PendingDelete {
			delete(next, k)
		}
		for k, v := range next {
			if strings.Contains(v, "local:iso/") {
				t.Errorf("%s: %s = %q still references an ISO (boot cdrom or cidata)", vm.Name, k, v)
			}
		}
	}
	for _, m := range machines {
		for _, v := range l.srv.Volumes(m.Zone, "local") {
			if strings.Contains(v.VolID, "taloscluster-cidata-") {
				t.Errorf("%s still holds %s", m.Zone, v.VolID)
			}
		}
	}
	l.srv.Recorder().Reset()
	plan = &provider.Plan{}
	if err := l.cloud.FinalizeMachines(t.Context(), l.inventory(t), plan); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
}
