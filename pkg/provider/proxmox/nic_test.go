package proxmox_test

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
)

// put runs a config PUT outside talosc (an older tool, an administrator).
func (l *pxLab) put(t *testing.T, m provider.Machine, body map[string]any) {
	t.Helper()
	path := "/nodes/" + m.Zone + "/qemu/" + m.ID + "/config"
	if err := l.api().Req(t.Context(), http.MethodPut, path, jsonBody(t, body), nil); err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
}

// vmConfig is a VM's config in the lab.
// restart restarts m in a dry run, which must mutate nothing, then for
// real, and checks both planned the one restart change.
func (l *pxLab) restart(t *testing.T, m provider.Machine) {
	t.Helper()
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.RestartMachine(t.Context(), m, dry); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	plan := &provider.Plan{}
	if err := l.cloud.RestartMachine(t.Context(), m, plan); err != nil {
		t.Fatal(err)
	}
	want := []string{"update proxmox:vm " + m.Hostname + " (restart to apply pending sizing / NIC MTU)"}
	if got := summary(plan.Changes()); !slices.Equal(got, summary(dry.Changes())) || !slices.Equal(got, want) {
		t.Errorf("restart changes %v (dry run %v), want %v", got, summary(dry.Changes()), want)
	}
}

func (l *pxLab) vmConfig(t *testing.T, m provider.Machine) map[string]string {
	t.Helper()
	vm, ok := l.srv.VM(vmid(t, m))
	if !ok {
		t.Fatalf("no VM %s", m.Hostname)
	}
	return vm.Config
}

// A NIC still carrying mtu= is rewritten to inherit the bridge MTU at
// once on a stopped VM, and on a running one only by its restart, which
// PendingRestart asks for; the plan shows both and mutates nothing.
func TestNICMTU_StoppedAtOnceRunningAtRestart(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	w1, w2 := machines[3], machines[4]
	net0 := map[string]string{}
	for _, m := range []provider.Machine{w1, w2} {
		net0[m.Hostname] = l.vmConfig(t, m)["net0"]
		l.put(t, m, map[string]any{"net0": net0[m.Hostname] + ",mtu=1400"})
	}
	l.post(t, "/nodes/"+w2.Zone+"/qemu/"+w2.ID+"/status/stop", nil)
	inv := l.inventory(t)
	l.srv.Recorder().Reset()

	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, dry); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"update proxmox:vm c-worker-02 (net0 mtu=1400 removed (inherits the bridge MTU))",
		"update proxmox:vm c-worker-02 (start the stopped VM)",
	}
	if got := summary(dry.Changes()); !slices.Equal(got, want) {
		t.Errorf("planned changes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, err := l.cloud.PendingRestart(t.Context(), inv); err != nil || !slices.Equal(got, []string{w1.Hostname}) {
		t.Errorf("pending restart %v, %v; want the running %s", got, err, w1.Hostname)
	}
	l.noMutations(t)

	plan := &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	if got := summary(plan.Changes()); !slices.Equal(got, want) {
		t.Errorf("changes %v, want the dry run's %v", got, want)
	}
	if got := l.vmConfig(t, w2)["net0"]; got != net0[w2.Hostname] {
		t.Errorf("stopped VM's net0 %q, want %q (same MAC and options, no mtu)", got, net0[w2.Hostname])
	}
	if got := l.vmConfig(t, w1)["net0"]; !strings.HasSuffix(got, ",mtu=1400") {
		t.Errorf("running VM's net0 rewritten before its restart: %q", got)
	}

	inv = l.inventory(t)
	w1, _ = inv.Find(w1.Hostname)
	l.srv.Recorder().Reset()
	l.restart(t, w1)
	var calls []string
	for _, c := range l.srv.Recorder().Mutations() {
		calls = append(calls, c.Method+" "+c.Path[strings.LastIndex(c.Path, "/"+w1.ID+"/")+len(w1.ID)+2:])
	}
	if !slices.Equal(calls, []string{"PUT config", "POST status/reboot"}) {
		t.Errorf("restart mutations %v, want the NIC rewrite right before the reboot", calls)
	}
	if got := l.vmConfig(t, w1)["net0"]; got != net0[w1.Hostname] {
		t.Errorf("restarted VM's net0 %q, want %q", got, net0[w1.Hostname])
	}
	if got, err := l.cloud.PendingRestart(t.Context(), l.inventory(t)); err != nil || len(got) != 0 {
		t.Errorf("pending restart after it: %v, %v", got, err)
	}
}

// A managed NIC without firewall=1 is warned about, naming VM and NIC.
func TestReconcileMachines_WarnsNICWithoutFirewall(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	cp1 := machines[0]
	l.put(t, cp1, map[string]any{"net0": strings.Replace(l.vmConfig(t, cp1)["net0"], "firewall=1", "firewall=0", 1)})
	l.srv.Recorder().Reset()
	if err := l.cloud.ReconcileMachines(t.Context(), l.inventory(t), &provider.Plan{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	logs := l.logs.String()
	if want := "warning: VM c-controlplane-01: NIC net0 has no firewall=1, so the security allowlists are NOT enforced on it"; !strings.Contains(logs, want) {
		t.Errorf("logs lack %q:\n%s", want, logs)
	}
	if strings.Count(logs, "firewall=1") != 1 {
		t.Errorf("warned about other VMs too:\n%s", logs)
	}
}

// Bridges below the configured MTU are warned about (one network read
// per node), the cluster's and the external one; a bridge at the MTU not.
func TestReconcileNetwork_WarnsBridgeMTUBelowConfigured(t *testing.T) {
	t.Parallel()
	o := twoNodes()
	o.Bridges = []string{"vmbr0", "vmbr1"}
	o.BridgeMTU = map[string]int{"vmbr0": 9000, "vmbr1": 1400}
	l := newLab(t, o, nil, labCluster{})
	l.cfg.Network.Cluster.MTU = 9000
	l.cfg.Proxmox.Network.External = &config.ProxmoxExternalNetwork{Bridge: "vmbr1"}
	l.cfg.Network.External = &config.ExternalNetwork{CIDR: netip.MustParsePrefix("127.30.0.0/24"), Gateway: netip.MustParseAddr("127.30.0.1"), MTU: 1500}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	logs := l.logs.String()
	for _, node := range []string{"pve1", "pve2"} {
		if want := "warning: node " + node + ": bridge vmbr1 has MTU 1400, below network.external.mtu 1500;"; !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "vmbr0") {
		t.Errorf("warned about vmbr0 at MTU 9000:\n%s", logs)
	}
	reads := 0
	for _, c := range l.srv.Recorder().Calls() {
		if strings.HasSuffix(c.Path, "/network") {
			reads++
		}
	}
	if reads != 2 {
		t.Errorf("%d node network reads, want one per node", reads)
	}

	// A bridge reporting no MTU runs the default 1500.
	l2 := newLab(t, twoNodes(), nil, labCluster{})
	l2.cfg.Network.Cluster.MTU = 9000
	if _, err := l2.cloud.ReconcileNetwork(t.Context(), networkSpec(l2.cfg), &provider.Plan{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if want := "warning: node pve2: bridge vmbr0 has MTU 1500, below network.cluster.mtu 9000;"; !strings.Contains(l2.logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, l2.logs)
	}
}

// The managed SDN VNet reports its zone's MTU, or none (1500).
func TestSDN_WarnsVNetMTUBelowConfigured(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	l.cfg.Network.Cluster.MTU = 9000
	for range 2 { // the first run creates the VNet after the bridge check
		if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
			t.Fatal(err)
		}
	}
	if want := "warning: node pve1: bridge labsdn has MTU 1500, below network.cluster.mtu 9000;"; !strings.Contains(l.logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, l.logs)
	}
}

// NIC changes on existing VMs are refused, before any mutation: the
// external NIC added or removed, its bridge moved, either VLAN changed.
func TestValidateMachines_RefusesNICChanges(t *testing.T) {
	t.Parallel()
	o := twoNodes()
	o.Bridges = []string{"vmbr0", "vmbr1", "vmbr2"}
	l := newLab(t, o, nil, labCluster{})
	l.createCluster(t)
	inv, desired := l.inventory(t), l.cfg.Hostnames()
	all := "c-controlplane-01, c-controlplane-02, c-controlplane-03, c-worker-01, c-worker-02"
	refused := func(wants ...string) {
		t.Helper()
		err := l.cloud.ValidateMachines(t.Context(), desired, inv)
		if err == nil {
			t.Fatalf("no refusal, want %q", wants)
		}
		for _, want := range wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal lacks %q:\n%v", want, err)
			}
		}
		if n := strings.Count(err.Error(), "\n") + 1; n != len(wants) {
			t.Errorf("%d refusals, want %d:\n%v", n, len(wants), err)
		}
	}
	ext := &config.ExternalNetwork{CIDR: netip.MustParsePrefix("127.30.0.0/24"), Gateway: netip.MustParseAddr("127.30.0.1"), VLAN: 20, MTU: 1500}
	l.cfg.Network.Cluster.VLAN = 10
	l.cfg.Proxmox.Network.External = &config.ProxmoxExternalNetwork{Bridge: "vmbr1"}
	l.cfg.Network.External = ext
	refused(
		"network.cluster.vlan changed from untagged to 10 for existing VM(s) "+all+"; the cluster NIC's VLAN tag is set when a VM is created: revert network.cluster.vlan or recreate those machines",
		"network.external changed from none to bridge vmbr1 for existing VM(s) "+all+"; the external NIC (net1) is set when a VM is created: revert network.external or recreate those machines",
	)

	// A cluster built with the external NIC: moved, retagged, removed.
	l2 := newLab(t, o, nil, labCluster{})
	l2.cfg.Proxmox.Network.External = &config.ProxmoxExternalNetwork{Bridge: "vmbr1"}
	l2.cfg.Network.External = ext
	l2.createCluster(t)
	l = l2
	inv = l.inventory(t)
	if err := l.cloud.ValidateMachines(t.Context(), desired, inv); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	l.cfg.Proxmox.Network.External.Bridge = "vmbr2"
	l.cfg.Network.External = &config.ExternalNetwork{CIDR: ext.CIDR, Gateway: ext.Gateway, VLAN: 30, MTU: 1500}
	refused(
		"proxmox.network.external.bridge changed from vmbr1 to vmbr2 for existing VM(s) "+all+"; the external NIC's bridge is set when a VM is created",
		"network.external.vlan changed from 20 to 30 for existing VM(s) "+all+"; the external NIC's VLAN tag is set when a VM is created",
	)
	l.cfg.Proxmox.Network.External, l.cfg.Network.External = nil, nil
	refused("network.external changed from bridge vmbr1 to none for existing VM(s) " + all + "; the external NIC (net1) is set when a VM is created")
	l.noMutations(t)
}

// With managed SDN, a running node whose address the static layout no
// longer computes (a worker pool added before the existing one) is
// refused, naming both addresses.
func TestValidateMachines_RefusesSDNRenumbering(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	machines, _ := l.createCluster(t)
	for _, m := range machines {
		d := slices.IndexFunc(l.cfg.Hostnames(), func(d config.Machine) bool { return d.Hostname == m.Hostname })
		addr, _ := l.cfg.SDNAddress(l.cfg.Hostnames()[d])
		if err := l.srv.SetGuestAgent(vmid(t, m), labpx.GuestInterface{Name: "eth0", Addrs: []netip.Prefix{netip.PrefixFrom(addr, 24)}}); err != nil {
			t.Fatal(err)
		}
	}
	inv := l.inventory(t)
	if err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	// Appending a pool renumbers nothing; inserting one before does.
	edge := l.cfg.Workers[0]
	edge.Name = "edge"
	l.cfg.Workers = append(l.cfg.Workers, edge)
	if err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv); err != nil {
		t.Fatalf("pool appended: %v", err)
	}
	l.cfg.Workers = []config.Pool{edge, l.cfg.Workers[0]}
	l.srv.Recorder().Reset()
	err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv)
	want := "managed SDN would renumber existing VM(s) (c-worker-01 127.20.0.61 -> 127.20.0.111, c-worker-02 127.20.0.62 -> 127.20.0.112): their running address is not the one the static layout now computes; worker pool changes renumber later pools"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "add new pools after the existing ones") {
		t.Errorf("refusal %v\nwant %q", err, want)
	}
	l.noMutations(t)

	// A guest agent that reports no address leaves the running address
	// unknown: the refusal cannot decide, so it refuses (I-V3).
	l.cfg.Workers = l.cfg.Workers[1:]
	w1 := machines[slices.IndexFunc(machines, func(m provider.Machine) bool { return m.Hostname == "c-worker-01" })]
	if err := l.srv.SetGuestAgent(vmid(t, w1)); err != nil {
		t.Fatal(err)
	}
	err = l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), l.inventory(t))
	want = "managed SDN: the running address of existing VM(s) c-worker-01 is unknown (stopped, or the QEMU guest agent does not answer)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("silent agent: %v\nwant %q", err, want)
	}
}
