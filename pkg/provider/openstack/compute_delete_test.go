package openstack_test

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/config"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// scaleLab is a cluster the way the phases build it: the network phase's
// resources and every desired machine booted on its ports.
type scaleLab struct {
	*netLab
	res     *provider.NetworkResult
	img     provider.Image
	compute *gophercloud.ServiceClient
	network *gophercloud.ServiceClient
}

// workersNet is defaultNet with n workers.
func workersNet(n int) netCluster {
	c := defaultNet
	c.workers = n
	return c
}

// newScaleLab builds 3 control planes and workers workers.
func newScaleLab(t *testing.T, workers int) *scaleLab {
	t.Helper()
	l := &scaleLab{netLab: newNetLab(t, labos.Config{}, openstack.Options{}, workersNet(workers))}
	l.compute, l.network, _ = demoClients(t, l.lab)
	l.res, _ = l.reconcile(t, false)
	var err error
	if l.img, err = l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	var specs []provider.MachineSpec
	for i, m := range l.cfg.Hostnames() {
		specs = append(specs, provider.MachineSpec{Machine: m, Config: []byte("version: v1alpha1\n"), Image: l.img, Attachment: l.res.Machines[i]})
	}
	if _, err := l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	l.rec.Reset()
	return l
}

// machine is the inventory's entry for host.
func (l *scaleLab) machine(t *testing.T, host string) provider.Machine {
	t.Helper()
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := inv.Find(host)
	if !ok {
		t.Fatalf("no %s in the inventory %v", host, inv.Hostnames())
	}
	return m
}

// server creates a server outside talosc with tags, on port (none when
// ""), booting from a volume of the image kept when the server goes.
func (l *scaleLab) server(t *testing.T, name, port string, tags []string) *servers.Server {
	t.Helper()
	opts := servers.CreateOpts{Name: name, FlavorRef: "4", Networks: "none", Tags: tags, BlockDevice: []servers.BlockDevice{{
		SourceType: servers.SourceImage, UUID: l.img.ID, DestinationType: servers.DestinationVolume, VolumeSize: 20, BootIndex: 0,
	}}}
	if port != "" {
		opts.Networks = []servers.Network{{Port: port}}
	}
	s, err := servers.Create(t.Context(), l.compute, opts, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// Nova binds the port during the build, as the lab's Nova does: wait
	// for it, so the test sees the port bound.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := servers.WaitForStatus(ctx, l.compute, s.ID, "ACTIVE"); err != nil {
		t.Fatalf("server %s never became ACTIVE: %v", name, err)
	}
	return s
}

// port creates a port on the cluster network outside talosc, with tags.
func (l *scaleLab) port(t *testing.T, name string, tags []string) *ports.Port {
	t.Helper()
	p, err := ports.Create(t.Context(), l.network, ports.CreateOpts{NetworkID: l.res.Network, Name: name}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) > 0 {
		if err := attributestags.ReplaceAll(t.Context(), l.network, "ports", p.ID, attributestags.ReplaceAllOpts{Tags: tags}).Err; err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func nodeTags(host, pool string) []string {
	return openstack.NodeTags(config.Machine{Hostname: host, Role: config.RoleWorker, Pool: pool}, "c")
}

// without is inv less the server, its ports and its volumes.
func without(inv labos.Inventory, server string) labos.Inventory {
	inv.Servers = slices.DeleteFunc(slices.Clone(inv.Servers), func(s labos.Server) bool { return s.ID == server })
	inv.Ports = slices.DeleteFunc(slices.Clone(inv.Ports), func(p labos.Port) bool { return p.DeviceID == server })
	inv.Volumes = slices.DeleteFunc(slices.Clone(inv.Volumes), func(v labos.Volume) bool { return v.ServerID == server })
	return inv
}

// everyField compares the lab's resources field by field, unexported
// ones too.
var everyField = cmp.Exporter(func(reflect.Type) bool { return true })

func (l *scaleLab) cinderDeletes() int {
	n := 0
	for _, c := range l.rec.Mutations() {
		if c.Service == labos.Cinder && c.Method == http.MethodDelete {
			n++
		}
	}
	return n
}

func TestDeleteMachine_DeletesExactlyOneServerWithItsPortAndBootVolume(t *testing.T) {
	l := newScaleLab(t, 3)
	// Not ours: a same-named port without the tags.
	l.port(t, "c-worker-02", nil)
	w2 := l.machine(t, "c-worker-02")
	before := l.lab.Inventory()
	i := slices.IndexFunc(before.Servers, func(s labos.Server) bool { return s.ID == w2.ID })
	if i < 0 || len(before.Servers[i].Ports) != 1 || len(before.Servers[i].Volumes) != 1 {
		t.Fatalf("c-worker-02 before the delete: %+v", before.Servers)
	}
	want := []string{"delete openstack:server c-worker-02 (server " + w2.ID + ", port " + before.Servers[i].Ports[0] + ", boot volume " + before.Servers[i].Volumes[0].ID + ")"}

	l.rec.Reset()
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DeleteMachine(t.Context(), w2, dry); err != nil {
		t.Fatal(err)
	}
	if m := l.rec.Mutations(); len(m) != 0 {
		t.Errorf("dry run mutations: %+v", m)
	}
	if diff := cmp.Diff(want, changeNames(dry.Changes())); diff != "" {
		t.Errorf("dry-run changes (-want +got):\n%s", diff)
	}

	plan := &provider.Plan{}
	if err := l.cloud.DeleteMachine(t.Context(), w2, plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, changeNames(plan.Changes())); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(without(before, w2.ID), l.lab.Inventory(), everyField); diff != "" {
		t.Errorf("the lab after deleting c-worker-02 (-want +got):\n%s", diff)
	}
	if n := l.cinderDeletes(); n != 0 {
		t.Errorf("talosc deleted %d volumes; Nova deletes a delete_on_termination boot volume itself", n)
	}

	// Deleting it again (the answer of the first run lost) is no change.
	l.rec.Reset()
	again := &provider.Plan{}
	if err := l.cloud.DeleteMachine(t.Context(), w2, again); err != nil || len(again.Changes()) != 0 {
		t.Errorf("second delete: %v, changes %v", err, changeNames(again.Changes()))
	}
	if m := l.rec.Mutations(); len(m) != 0 {
		t.Errorf("second delete mutations: %+v", m)
	}
}

func TestDeleteMachine_DeletesABootVolumeNovaKeeps(t *testing.T) {
	l := newScaleLab(t, 2)
	// A legacy server on the network phase's port of a third worker, its
	// boot volume not deleted on termination.
	l.configure(t, workersNet(3))
	res, _ := l.reconcile(t, false)
	s := l.server(t, "c-worker-03", res.Machines[5].Attachment, []string{"managed-by=clusterctl", "cluster=c", "role=worker", "pool=worker"})
	w3 := l.machine(t, "c-worker-03")
	before := l.lab.Inventory()
	l.rec.Reset()
	if err := l.cloud.DeleteMachine(t.Context(), w3, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(without(before, s.ID), l.lab.Inventory(), everyField); diff != "" {
		t.Errorf("the lab after deleting c-worker-03 (-want +got):\n%s", diff)
	}
	if n := l.cinderDeletes(); n != 1 {
		t.Errorf("talosc deleted %d volumes, want the boot volume Nova kept", n)
	}
}

func TestDeleteMachine_RefusesWhatItCannotProveOwned(t *testing.T) {
	l := newScaleLab(t, 3)
	w1, w3 := l.machine(t, "c-worker-01"), l.machine(t, "c-worker-03")
	// A same-named server without the tags, on an owned port named after
	// c-worker-01.
	p := l.port(t, "c-worker-01", nodeTags("c-worker-01", "worker"))
	foreign := l.server(t, "c-worker-03", p.ID, nil)
	renamed := w3
	renamed.Hostname = "c-worker-09"
	before := l.lab.Inventory()
	l.rec.Reset()
	for _, tc := range []struct {
		m    provider.Machine
		want string
	}{
		{
			provider.Machine{Hostname: "c-worker-03", ID: foreign.ID},
			"delete server c-worker-03: refusing to delete server c-worker-03 (" + foreign.ID + "): it lacks the ownership tags managed-by=taloscluster and cluster=c",
		},
		{renamed, "delete server c-worker-09: refusing to delete server " + w3.ID + ": it is named c-worker-03 now, not c-worker-09; rerun to read the inventory again"},
		{w1, "delete server c-worker-01: refusing to delete port c-worker-01 (" + p.ID + "): it is bound to compute:nova " + foreign.ID + ", not to server " + w1.ID},
		{provider.Machine{Hostname: "c-worker-01"}, "delete server c-worker-01: the inventory entry has no server id; rerun to read the inventory again"},
	} {
		plan := &provider.Plan{}
		err := l.cloud.DeleteMachine(t.Context(), tc.m, plan)
		if err == nil || err.Error() != tc.want || len(plan.Changes()) != 0 {
			t.Errorf("delete %+v: %v (changes %v)\nwant %s", tc.m, err, changeNames(plan.Changes()), tc.want)
		}
	}
	if m := l.rec.Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
	if diff := cmp.Diff(before, l.lab.Inventory(), everyField); diff != "" {
		t.Errorf("a refusal changed the lab (-before +after):\n%s", diff)
	}
}

// TestScaleDown_NetworkPhaseLeavesThePortsOfMachinesWithAServer runs a
// scale-down as the phases do: the network phase first (it sees the
// undesired machines' ports while their servers exist), then the nodes
// phase's DeleteMachine, then the network phase again.
func TestScaleDown_NetworkPhaseLeavesThePortsOfMachinesWithAServer(t *testing.T) {
	l := newScaleLab(t, 3)
	// A fourth worker's server whose build failed: it holds no port, and
	// the network phase's port for it is unbound.
	l.configure(t, workersNet(4))
	l.reconcile(t, false)
	l.server(t, "c-worker-04", "", nodeTags("c-worker-04", "worker"))
	w3, w4 := l.machine(t, "c-worker-03"), l.machine(t, "c-worker-04")

	l.configure(t, workersNet(2))
	if _, changes := l.reconcile(t, false); len(changes) != 0 {
		t.Errorf("the network phase changed the ports of machines that still have a server:\n%v", changeNames(changes))
	}
	for _, m := range []provider.Machine{w3, w4} {
		if err := l.cloud.DeleteMachine(t.Context(), m, &provider.Plan{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, changes := l.reconcile(t, false); len(changes) != 0 {
		t.Errorf("the network phase after the scale-down changed:\n%v", changeNames(changes))
	}
	// 2 reserved, 3 control planes, 2 workers.
	if got := l.owned(); got["ports"] != 7 || got["servers"] != 5 || got["volumes"] != 5 {
		t.Errorf("owned after the scale-down: %v", got)
	}
}
