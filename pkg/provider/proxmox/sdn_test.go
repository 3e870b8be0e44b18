package proxmox_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

const labSDN = "sdn: {name: labsdn, vrf_tag: 20000}"

func sdnLab(t *testing.T) *pxLab {
	t.Helper()
	return newLab(t, twoNodes(), nil, labCluster{netCluster: labSDN})
}

// kinds is the "action kind name" of each change.
func kinds(plan *provider.Plan) []string {
	var out []string
	for _, c := range plan.Changes() {
		out = append(out, string(c.Action)+" "+c.Kind+" "+c.Name)
	}
	return out
}

var buildChanges = []string{
	"create proxmox:sdn-controller evpnctl",
	"create proxmox:sdn-zone labsdn",
	"create proxmox:sdn-vnet labsdn",
	"create proxmox:sdn-subnet labsdn-127.20.0.0-24",
	"update proxmox:sdn-apply cluster/sdn",
}

// From nothing, converge creates the controller, zone, VNet and subnet,
// applies once and verifies the bridge; a re-run changes nothing; destroy
// removes the cluster's objects and keeps the shared controller.
func TestSDN_BuildRerunDestroy(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	plan := &provider.Plan{}
	res, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), plan)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(buildChanges, kinds(plan)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if res.Network != "labsdn" || res.Machines[0].Address != netip.MustParseAddr("127.20.0.11") || res.Machines[3].Address != netip.MustParseAddr("127.20.0.61") ||
		res.Kubernetes.VIP != netip.MustParseAddr("127.20.0.2") {
		t.Errorf("result %+v", res)
	}
	want := map[labpx.SDNKind]map[string]map[string]string{
		labpx.SDNControllers: {"evpnctl": {"type": "evpn", "asn": "65000", "peers": "127.0.10.1,127.0.10.2"}},
		labpx.SDNZones: {"labsdn": {
			"type": "evpn", "controller": "evpnctl", "vrf-vxlan": "20000", "exitnodes": "pve1,pve2", "exitnodes-primary": "pve1",
			"advertise-subnets": "1", "disable-arp-nd-suppression": "1",
		}},
		labpx.SDNVNets:   {"labsdn": {"type": "vnet", "zone": "labsdn", "tag": "20001", "alias": "managed-by taloscluster cluster c"}},
		labpx.SDNSubnets: {"labsdn-127.20.0.0-24": {"type": "subnet", "vnet": "labsdn", "gateway": "127.20.0.1", "snat": "1"}},
	}
	for kind, objs := range want {
		if diff := cmp.Diff(objs, l.srv.SDNObjects(kind, true)); diff != "" {
			t.Errorf("running %s (-want +got):\n%s", kind, diff)
		}
	}

	l.srv.Recorder().Reset()
	again := &provider.Plan{}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), again); err != nil {
		t.Fatal(err)
	}
	if len(again.Changes()) != 0 {
		t.Errorf("re-run changes %v", kinds(again))
	}
	l.noMutations(t)

	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DestroyNetwork(t.Context(), dry); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	destroy := &provider.Plan{}
	if err := l.cloud.DestroyNetwork(t.Context(), destroy); err != nil {
		t.Fatal(err)
	}
	wantDestroy := []string{
		"delete proxmox:sdn-subnet labsdn-127.20.0.0-24",
		"delete proxmox:sdn-vnet labsdn",
		"delete proxmox:sdn-zone labsdn",
		"update proxmox:sdn-apply cluster/sdn",
	}
	if diff := cmp.Diff(wantDestroy, kinds(destroy)); diff != "" {
		t.Errorf("destroy changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantDestroy, kinds(dry)); diff != "" {
		t.Errorf("dry-run destroy changes (-want +got):\n%s", diff)
	}
	for _, kind := range []labpx.SDNKind{labpx.SDNZones, labpx.SDNVNets, labpx.SDNSubnets} {
		if got := l.srv.SDNObjects(kind, true); len(got) != 0 {
			t.Errorf("running %s after destroy: %v", kind, got)
		}
	}
	if got := l.srv.SDNObjects(labpx.SDNControllers, true); got["evpnctl"] == nil {
		t.Errorf("destroy removed the shared controller: %v", got)
	}
}

// A dry run from nothing plans every change and makes none.
func TestSDN_DryRun(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	plan := &provider.Plan{DryRun: true}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(buildChanges, kinds(plan)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	l.noMutations(t)
}

// Another administrator's unapplied change is refused, left pending and
// never committed, by converge and destroy alike.
func TestSDN_ForeignPendingRefused(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	if err := l.srv.StageSDN(labpx.SDNZones, "other", map[string]string{"type": "simple"}); err != nil {
		t.Fatal(err)
	}
	const want = "unapplied Proxmox SDN changes exist (zone other new)"
	for _, dry := range []bool{true, false} {
		_, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("converge (dry run %v): err = %v, want %q", dry, err, want)
		}
		err = l.cloud.DestroyNetwork(t.Context(), &provider.Plan{DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("destroy (dry run %v): err = %v, want %q", dry, err, want)
		}
	}
	if err := l.cloud.ValidateTeardown(t.Context()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ValidateTeardown: err = %v", err)
	}
	l.noMutations(t)
	if l.srv.SDNObjects(labpx.SDNZones, false)["other"] == nil || l.srv.SDNObjects(labpx.SDNZones, true)["other"] != nil {
		t.Error("the foreign change is no longer pending")
	}
}

// A VNet talosc does not own in the cluster's zone is refused; a pending
// change on the shared controller too.
func TestSDN_AdoptionAndControllerRefusals(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if err := l.srv.StageSDN(labpx.SDNVNets, "alien", map[string]string{"type": "vnet", "zone": "labsdn", "tag": "30001"}); err != nil {
		t.Fatal(err)
	}
	l.srv.ApplySDN()
	l.srv.Recorder().Reset()
	_, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{})
	if want := "zone labsdn holds VNets talosc does not manage (alien)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("foreign VNet: err = %v, want %q", err, want)
	}
	// Destroy keeps the zone holding the foreign VNet.
	plan := &provider.Plan{DryRun: true}
	if err := l.cloud.DestroyNetwork(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	if got := kinds(plan); !cmp.Equal(got, []string{
		"delete proxmox:sdn-subnet labsdn-127.20.0.0-24", "delete proxmox:sdn-vnet labsdn", "update proxmox:sdn-apply cluster/sdn",
	}) {
		t.Errorf("destroy plan %v", got)
	}
	l.noMutations(t)

	ctl := l.srv.SDNObjects(labpx.SDNControllers, false)["evpnctl"]
	ctl["asn"] = "65001"
	if err := l.srv.StageSDN(labpx.SDNControllers, "evpnctl", ctl); err != nil {
		t.Fatal(err)
	}
	err = l.cloud.DestroyNetwork(t.Context(), &provider.Plan{})
	if want := "refusing to commit pending SDN state on the shared controller evpnctl (changed)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("controller: err = %v, want %q", err, want)
	}
	l.noMutations(t)
}

// An applied zone that drifted from cluster.yaml is updated in place
// (node lists compared as sets) and applied.
func TestSDN_ZoneDrift(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	z := l.srv.SDNObjects(labpx.SDNZones, false)["labsdn"]
	z["exitnodes"], z["advertise-subnets"] = "pve2,pve1", "0"
	if err := l.srv.StageSDN(labpx.SDNZones, "labsdn", z); err != nil {
		t.Fatal(err)
	}
	l.srv.ApplySDN()
	plan := &provider.Plan{}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), plan); err != nil {
		t.Fatal(err)
	}
	want := []state.Change{
		{Action: state.ActionUpdate, Kind: "proxmox:sdn-zone", Name: "labsdn", Detail: `advertise-subnets "0" -> "1"`},
		{Action: state.ActionUpdate, Kind: "proxmox:sdn-apply", Name: "cluster/sdn", Detail: "apply the staged SDN configuration"},
	}
	if diff := cmp.Diff(want, plan.Changes()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got := l.srv.SDNObjects(labpx.SDNZones, true)["labsdn"]["advertise-subnets"]; got != "1" {
		t.Errorf("advertise-subnets = %q", got)
	}
}

// What an earlier run staged but never applied (pending "new") is resumed
// and applied; a staged change to the cluster's own applied zone is refused.
func TestSDN_ResumeOwnPendingRefuseOwnChanged(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	for _, o := range []struct {
		kind labpx.SDNKind
		id   string
		p    map[string]string
	}{
		{labpx.SDNControllers, "evpnctl", map[string]string{"type": "evpn", "asn": "65000", "peers": "127.0.10.1,127.0.10.2"}},
		{labpx.SDNZones, "labsdn", map[string]string{
			"type": "evpn", "controller": "evpnctl", "vrf-vxlan": "20000", "exitnodes": "pve1,pve2", "exitnodes-primary": "pve1",
			"advertise-subnets": "1", "disable-arp-nd-suppression": "1",
		}},
	} {
		if err := l.srv.StageSDN(o.kind, o.id, o.p); err != nil {
			t.Fatal(err)
		}
	}
	plan := &provider.Plan{}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(buildChanges[2:], kinds(plan)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if l.srv.SDNObjects(labpx.SDNZones, true)["labsdn"] == nil {
		t.Error("the resumed zone was not applied")
	}

	z := l.srv.SDNObjects(labpx.SDNZones, false)["labsdn"]
	z["mtu"] = "1400"
	if err := l.srv.StageSDN(labpx.SDNZones, "labsdn", z); err != nil {
		t.Fatal(err)
	}
	l.srv.Recorder().Reset()
	_, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{})
	if want := "refusing to commit pending SDN state on the cluster's own zone labsdn (changed)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	l.noMutations(t)
}

// A VXLAN id another zone already uses is refused before any change.
func TestSDN_VNICollision(t *testing.T) {
	t.Parallel()
	l := sdnLab(t)
	for _, o := range []struct {
		kind labpx.SDNKind
		id   string
		p    map[string]string
	}{
		{labpx.SDNControllers, "theirs", map[string]string{"type": "evpn", "asn": "65000", "peers": "127.0.10.1"}},
		{labpx.SDNZones, "theirz", map[string]string{"type": "evpn", "controller": "theirs", "vrf-vxlan": "20001"}},
	} {
		if err := l.srv.StageSDN(o.kind, o.id, o.p); err != nil {
			t.Fatal(err)
		}
	}
	l.srv.ApplySDN()
	_, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{})
	if want := "VXLAN id 20001 is already the vrf-vxlan of zone theirz; set explicit proxmox.network.cluster.sdn.vrf_tag/tag"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	l.noMutations(t)
}
