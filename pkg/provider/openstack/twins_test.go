package openstack_test

import (
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/lab/inventory"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// A create a busy service applies after the late window has passed leaves
// a second owned resource of one name, which the next run's reads find.

func TestReconcileNetwork_TheNextRunDeletesTheTwinACreateAppliedPastTheWindowLeft(t *testing.T) {
	t.Parallel()
	clean := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	clean.reconcile(t, false)
	// The first port is the kubeapi VIP's; its create reaches Neutron
	// after talosc made it again.
	late := newLateAt(t, "/v2.0/ports", 1, provider.LateWindow(5*time.Second)+3*time.Second)
	l := newNetLab(t, labos.Config{}, openstack.Options{HTTPClient: &http.Client{Transport: late}}, defaultNet)
	if _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); err != nil {
		t.Fatalf("first run: %v\n%s", err, l.logs)
	}
	<-late.done
	if n := len(portsNamed(l.lab, "c-kubeapi")); n != 2 {
		t.Fatalf("the lab holds %d ports named c-kubeapi after the late create, want 2", n)
	}
	next := l.reconnect(t)
	before := l.lab.Snapshot()
	plan := &provider.Plan{DryRun: true}
	if _, err := next.ReconcileNetwork(t.Context(), l.spec, plan); err != nil {
		t.Fatalf("plan: %v\n%s", err, l.logs)
	}
	if !deletes(plan, "openstack:port", "c-kubeapi") {
		t.Errorf("the plan does not list the twin's delete: %v", changeNames(plan.Changes()))
	}
	if diff := inventory.Diff(before, l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("the plan changed the lab:\n%s", strings.Join(diff, "\n"))
	}
	if _, err := next.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); err != nil {
		t.Fatalf("next run: %v\n%s", err, l.logs)
	}
	if !strings.Contains(l.logs.String(), "openstack: port c-kubeapi: 2 owned resources of this name (a create applied late): keeping ") {
		t.Errorf("the twin was not reported:\n%s", l.logs)
	}
	if diff := inventory.Diff(clean.lab.Snapshot(), l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
	}
}

func TestReconcileNetwork_RefusesTwoOwnedPortsOfOneNameBothInUse(t *testing.T) {
	t.Parallel()
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	_, network, _ := demoClients(t, l.lab)
	vip := portsNamed(l.lab, "c-kubeapi")[0]
	// A twin of the VIP port made by an earlier talosc (its legacy
	// marker), which now holds the kubeapi floating IP; the VIP port is
	// still the address the machine ports let through.
	twin, err := ports.Create(t.Context(), network, ports.CreateOpts{
		NetworkID: vip.NetworkID, Name: "c-kubeapi", Description: openstack.TagManagedBy + " " + openstack.ClusterTag("c"),
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fips, err := floatingips.List(network, floatingips.ListOpts{PortID: vip.ID}).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fip, err := floatingips.ExtractFloatingIPs(fips)
	if err != nil || len(fip) != 1 {
		t.Fatalf("the kubeapi floating ip: %v, %v", fip, err)
	}
	if _, err := floatingips.Update(t.Context(), network, fip[0].ID, floatingips.UpdateOpts{PortID: &twin.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	before := l.lab.Snapshot()
	_, err = l.reconnect(t).ReconcileNetwork(t.Context(), l.spec, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "port c-kubeapi: 2 owned resources of this name are in use (") ||
		!strings.Contains(err.Error(), vip.ID) || !strings.Contains(err.Error(), twin.ID) {
		t.Fatalf("err = %v, want both ports in use refused, named", err)
	}
	if diff := inventory.Diff(before, l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("the refused run changed the lab:\n%s", strings.Join(diff, "\n"))
	}
}

// portsNamed are the lab's ports named name.
func portsNamed(lab *labos.Cloud, name string) []labos.Port {
	return slices.DeleteFunc(lab.Inventory().Ports, func(p labos.Port) bool { return p.Name != name })
}

// twinInError boots the three control planes and then makes an owned twin
// of c-controlplane-02 that goes to ERROR without a port: what a create
// applied after talosc made the server again leaves (its port was bound to
// the other).
func twinInError(t *testing.T) (*computeLab, string) {
	t.Helper()
	var fail atomic.Bool
	l := newComputeLab(t, labos.Config{FailBoot: func(string) bool { return fail.Load() }}, threeCPs)
	specs, _ := l.boot(t)
	fail.Store(true)
	m := specs[1].Machine
	twin, err := servers.Create(t.Context(), l.compute, servers.CreateOpts{
		Name: m.Hostname, FlavorRef: "3", ImageRef: specs[1].Image.ID, Networks: "none", Tags: openstack.NodeTags(m, "c"),
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, l, twin.ID, "ERROR")
	return l, twin.ID
}

func TestInventory_KeepsTheServerInUseAndDeletesItsTwinInError(t *testing.T) {
	t.Parallel()
	clean := newComputeLab(t, labos.Config{}, threeCPs)
	clean.boot(t)
	l, twin := twinInError(t)
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatalf("Inventory: %v\n%s", err, l.logs)
	}
	if m, ok := inv.Find("c-controlplane-02"); len(inv.Machines) != 3 || !ok || m.ID == twin {
		t.Fatalf("inventory %+v: want the 3 control planes, c-controlplane-02 the server in use, not %s", inv.Machines, twin)
	}
	before := l.lab.Snapshot()
	plan := &provider.Plan{DryRun: true}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	if !deletes(plan, openstack.KindServer, "c-controlplane-02") {
		t.Errorf("the plan does not list the twin's delete: %v", changeNames(plan.Changes()))
	}
	if diff := inventory.Diff(before, l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("the plan changed the lab:\n%s", strings.Join(diff, "\n"))
	}
	if inv, err = l.cloud.Inventory(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, &provider.Plan{}); err != nil {
		t.Fatalf("ReconcileMachines: %v\n%s", err, l.logs)
	}
	if diff := inventory.Diff(clean.lab.Snapshot(), l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
	}
}

func TestDestroyMachines_DeletesTheTwinInErrorToo(t *testing.T) {
	t.Parallel()
	l, _ := twinInError(t)
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.DestroyMachines(t.Context(), inv, &provider.Plan{}); err != nil {
		t.Fatalf("DestroyMachines: %v\n%s", err, l.logs)
	}
	if left := l.lab.Inventory(); len(left.Servers) != 0 || len(left.Volumes) != 0 {
		t.Errorf("left servers %+v, volumes %+v", left.Servers, left.Volumes)
	}
}

func TestInventory_RefusesTwoOwnedServersOfOneNameInUse(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	specs, got := l.boot(t)
	m := specs[1].Machine
	// A twin holding a port of its own: it may carry a node.
	port, err := ports.Create(t.Context(), l.network, ports.CreateOpts{NetworkID: l.lab.Inventory().Networks[0].ID, Name: "other"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	dup, err := servers.Create(t.Context(), l.compute, servers.CreateOpts{
		Name: m.Hostname, FlavorRef: "3", ImageRef: specs[1].Image.ID, Networks: []servers.Network{{Port: port.ID}}, Tags: openstack.NodeTags(m, "c"),
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, l, dup.ID, "ACTIVE")
	_, err = l.cloud.Inventory(t.Context())
	if err == nil || !strings.Contains(err.Error(), "server c-controlplane-02: 2 owned resources of this name are in use (") ||
		!strings.Contains(err.Error(), dup.ID) || !strings.Contains(err.Error(), got[1].ID) {
		t.Fatalf("err = %v, want both servers refused, named", err)
	}
}

func TestInventory_DeletesEveryCopyWhenNoneHoldsAPort(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	l := newComputeLab(t, labos.Config{FailBoot: func(string) bool { return fail.Load() }}, threeCPs)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	m := l.machineSpecs(t, img)[0].Machine
	// What the real cloud left: the copy whose build failed, and an ACTIVE
	// one whose port that failure unbound.
	for _, status := range []string{"ACTIVE", "ERROR"} {
		fail.Store(status == "ERROR")
		s, err := servers.Create(t.Context(), l.compute, servers.CreateOpts{
			Name: m.Hostname, FlavorRef: "3", ImageRef: img.ID, Networks: "none", Tags: openstack.NodeTags(m, "c"),
		}, nil).Extract()
		if err != nil {
			t.Fatal(err)
		}
		awaitStatus(t, l, s.ID, status)
	}
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil || len(inv.Machines) != 0 {
		t.Fatalf("Inventory = %+v, %v; want no machine: neither copy carries a node", inv, err)
	}
	plan := &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatalf("ReconcileMachines: %v\n%s", err, l.logs)
	}
	if n := len(plan.Changes()); n != 2 {
		t.Errorf("the plan holds %d changes, want the 2 deletes: %v", n, changeNames(plan.Changes()))
	}
	if left := l.lab.Inventory(); len(left.Servers) != 0 || len(left.Volumes) != 0 {
		t.Errorf("left servers %+v, volumes %+v", left.Servers, left.Volumes)
	}
}

// awaitStatus waits until the lab's server id has status.
func awaitStatus(t *testing.T, l *computeLab, id, status string) {
	t.Helper()
	for {
		s, err := servers.Get(t.Context(), l.compute, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == status {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
