package openstack_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/tags"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// fixture is an image, a network with a subnet, and ports, as talosc's
// image and network phases leave them.
type fixture struct {
	image, network, subnet string
}

func newFixture(t *testing.T, c clients) fixture {
	t.Helper()
	ctx := t.Context()
	img := must(images.Create(ctx, c.image, images.CreateOpts{
		Name: "talos-v1.13.8-ce4c98", DiskFormat: "raw", ContainerFormat: "bare",
		MinDisk: 20, MinRAM: 2048, Properties: map[string]string{"hw_qemu_guest_agent": "yes"},
	}).Extract()).ok(t)
	noErr(t, imagedata.Upload(ctx, c.image, img.ID, strings.NewReader("talos raw disk")).ExtractErr())
	n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "demo-net"}).Extract()).ok(t)
	sn := must(subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: n.ID, CIDR: "127.42.0.0/24", IPVersion: 4}).Extract()).ok(t)
	return fixture{image: img.ID, network: n.ID, subnet: sn.ID}
}

func (f fixture) port(t *testing.T, c clients, name string) string {
	t.Helper()
	return must(ports.Create(t.Context(), c.network, ports.CreateOpts{NetworkID: f.network, Name: name}).Extract()).ok(t).ID
}

// serverOpts is what talosc sends for a node.
func (f fixture) serverOpts(name, port string, userData []byte) servers.CreateOpts {
	yes := true
	return servers.CreateOpts{
		Name: name, FlavorRef: "3", Networks: []servers.Network{{Port: port}}, ConfigDrive: &yes, UserData: userData,
		AvailabilityZone: "nova", Tags: []string{"managed-by=taloscluster", "cluster=demo", "role=controlplane", "pool=controlplane"},
		BlockDevice: []servers.BlockDevice{{
			SourceType: servers.SourceImage, UUID: f.image, DestinationType: servers.DestinationVolume,
			VolumeSize: 20, BootIndex: 0, DeleteOnTermination: true,
		}},
	}
}

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []openstack.Event
	lab := start(t, openstack.Config{
		BootDelay: 30 * time.Millisecond, DeleteDelay: 40 * time.Millisecond,
		OnEvent: func(e openstack.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
	})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	fx := newFixture(t, c)
	port := fx.port(t, c, "demo-controlplane-01")
	machineConfig := []byte("version: v1alpha1\nmachine:\n  type: controlplane\n")

	srv := must(servers.Create(ctx, c.compute, fx.serverOpts("demo-controlplane-01", port, machineConfig), nil).Extract()).ok(t)
	got := must(servers.Get(ctx, c.compute, srv.ID).Extract()).ok(t)
	if got.Status != "BUILD" || got.Tags == nil || len(*got.Tags) != 4 || !got.ConfigDrive {
		t.Errorf("just created: status %s tags %v config drive %v", got.Status, got.Tags, got.ConfigDrive)
	}
	noErr(t, servers.WaitForStatus(ctx, c.compute, srv.ID, "ACTIVE")) // gophercloud's own poller
	got = must(servers.Get(ctx, c.compute, srv.ID).Extract()).ok(t)
	if got.Flavor["original_name"] != "talos.cp" || len(got.AttachedVolumes) != 1 || got.Userdata != nil {
		t.Errorf("active server: flavor %v volumes %v user data visible to a member: %v", got.Flavor, got.AttachedVolumes, got.Userdata != nil)
	}
	if addrs := got.Addresses["demo-net"].([]any); len(addrs) != 1 || addrs[0].(map[string]any)["addr"] != "127.42.0.2" {
		t.Errorf("addresses %v", got.Addresses)
	}
	vol := must(volumes.Get(ctx, c.volume, got.AttachedVolumes[0].ID).Extract()).ok(t)
	if vol.Status != "in-use" || vol.Size != 20 || vol.Bootable != "true" || len(vol.Attachments) != 1 || vol.Attachments[0].ServerID != srv.ID {
		t.Errorf("boot volume %+v", vol)
	}
	p := must(ports.Get(ctx, c.network, port).Extract()).ok(t)
	if p.DeviceID != srv.ID || p.Status != "ACTIVE" || p.DeviceOwner != "compute:nova" {
		t.Errorf("bound port %+v", p)
	}

	// The talos-node simulation boots from the Event; an admin reads the
	// same user_data at microversion 2.3 (how the lab follows a real cloud).
	mu.Lock()
	if len(events) != 1 || events[0].Kind != openstack.ServerActive || !bytes.Equal(events[0].UserData, machineConfig) || events[0].Ports[0].FixedIPs[0].IPAddress != "127.42.0.2" {
		t.Errorf("events %+v", events)
	}
	mu.Unlock()
	admin := newClients(t, login(t, lab, "admin", "admin"))
	admin.compute.Microversion = "2.3"
	asAdmin := must(servers.Get(ctx, admin.compute, srv.ID).Extract()).ok(t)
	if asAdmin.Userdata == nil || *asAdmin.Userdata != base64.StdEncoding.EncodeToString(machineConfig) {
		t.Errorf("admin user_data %v", asAdmin.Userdata)
	}

	pages := must(servers.List(c.compute, servers.ListOpts{Name: "^demo-controlplane-", Tags: "cluster=demo,role=controlplane"}).AllPages(ctx)).ok(t)
	if list, _ := servers.ExtractServers(pages); len(list) != 1 || list[0].ID != srv.ID {
		t.Errorf("list by name and tags: %v", list)
	}
	pages = must(servers.List(c.compute, servers.ListOpts{NotTagsAny: "cluster=demo"}).AllPages(ctx)).ok(t)
	if list, _ := servers.ExtractServers(pages); len(list) != 0 {
		t.Errorf("not-tags-any: %v", list)
	}

	noErr(t, tags.Add(ctx, c.compute, srv.ID, "extra").ExtractErr())
	if ok, err := tags.Check(ctx, c.compute, srv.ID, "extra").Extract(); !ok || err != nil {
		t.Errorf("tag check %v %v", ok, err)
	}
	replaced := must(tags.ReplaceAll(ctx, c.compute, srv.ID, tags.ReplaceAllOpts{Tags: []string{"b", "a"}}).Extract()).ok(t)
	if diff := cmp.Diff([]string{"a", "b"}, replaced); diff != "" {
		t.Errorf("replace tags (-want +got):\n%s", diff)
	}

	noErr(t, servers.Delete(ctx, c.compute, srv.ID).ExtractErr())
	var seen []string
	eventually(t, "the server to be gone", func() bool {
		s, err := servers.Get(ctx, c.compute, srv.ID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return true
		}
		if err == nil && (len(seen) == 0 || seen[len(seen)-1] != s.Status+"/"+s.TaskState) {
			seen = append(seen, s.Status+"/"+s.TaskState)
		}
		return false
	})
	if diff := cmp.Diff([]string{"ACTIVE/deleting", "DELETED/"}, seen); diff != "" {
		t.Errorf("delete states (-want +got):\n%s", diff)
	}
	_, err := volumes.Get(ctx, c.volume, vol.ID).Extract()
	wantCode(t, err, http.StatusNotFound, "itemNotFound")
	p = must(ports.Get(ctx, c.network, port).Extract()).ok(t)
	if p.DeviceID != "" || p.Status != "DOWN" {
		t.Errorf("port after delete %+v", p)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[1].Kind != openstack.ServerDeleted || events[1].Server.ID != srv.ID {
		t.Errorf("events %+v", events)
	}
}

func TestServerCreateValidation(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	fx := newFixture(t, c)

	big := bytes.Repeat([]byte("k: v\n"), 9840) // 49200 bytes, 65600 after base64
	_, err := servers.Create(ctx, c.compute, fx.serverOpts("big", fx.port(t, c, "big"), big), nil).Extract()
	wantCode(t, err, http.StatusBadRequest, `{"badRequest":{"code":400,"message":"Invalid input for field/attribute user_data. Value: `, "is too long")

	c.compute.Microversion = "2.51"
	_, err = servers.Create(ctx, c.compute, fx.serverOpts("old", fx.port(t, c, "old"), nil), nil).Extract()
	wantCode(t, err, http.StatusBadRequest, "Additional properties are not allowed ('tags' was unexpected)")
	c.compute.Microversion = "2.52"

	small := fx.serverOpts("small", fx.port(t, c, "small"), nil)
	small.BlockDevice[0].VolumeSize = 10
	_, err = servers.Create(ctx, c.compute, small, nil).Extract()
	wantCode(t, err, http.StatusBadRequest, "Volume is smaller than the minimum size specified in image metadata")

	first := fx.port(t, c, "one")
	one := must(servers.Create(ctx, c.compute, fx.serverOpts("one", first, nil), nil).Extract()).ok(t)
	eventually(t, "one ACTIVE", func() bool {
		s, err := servers.Get(ctx, c.compute, one.ID).Extract()
		return err == nil && s.Status == "ACTIVE"
	})
	_, err = servers.Create(ctx, c.compute, fx.serverOpts("two", first, nil), nil).Extract()
	wantCode(t, err, http.StatusConflict, "Port "+first+" is still in use.")

	noErr(t, lab.SetQuota("demo", openstack.Quota{Instances: 1}))
	_, err = servers.Create(ctx, c.compute, fx.serverOpts("three", fx.port(t, c, "three"), nil), nil).Extract()
	wantCode(t, err, http.StatusForbidden, `{"forbidden":{"code":403,"message":"Quota exceeded for instances: Requested 1, but already used 1 of 1 instances"}}`)

	c.compute.Microversion = "2.200"
	_, err = servers.Get(ctx, c.compute, "x").Extract()
	wantCode(t, err, http.StatusNotAcceptable, "Version 2.200 is not supported by the API. Minimum is 2.1 and maximum is 2.93.")
}

// TestSecondServerOfAPortFailsItsBuild: as nova-api, the lab accepts a
// server given a port no server has bound yet (202), and binds it during
// the build, as nova-compute does: of two servers given one port while
// neither is built, one builds and the other goes to ERROR with Nova's
// PortInUse fault (whichever builds first wins, as in Nova), and the port
// stays the built one's (deleting the failed one does not unbind it).
func TestSecondServerOfAPortFailsItsBuild(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []openstack.Event
	lab := start(t, openstack.Config{
		BootDelay: time.Second, // the ports are bound after 500 ms
		OnEvent:   func(e openstack.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
	})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	fx := newFixture(t, c)
	port := fx.port(t, c, "shared")
	first := must(servers.Create(ctx, c.compute, fx.serverOpts("first", port, nil), nil).Extract()).ok(t)
	second := must(servers.Create(ctx, c.compute, fx.serverOpts("second", port, nil), nil).Extract()).ok(t)
	if p := must(ports.Get(ctx, c.network, port).Extract()).ok(t); p.DeviceID != "" {
		t.Errorf("the port is bound to %s inside the POST; Nova binds it during the build", p.DeviceID)
	}
	status := map[string]string{}
	eventually(t, "one server ACTIVE, the other in ERROR", func() bool {
		for _, id := range []string{first.ID, second.ID} {
			s, err := servers.Get(ctx, c.compute, id).Extract()
			if err != nil {
				return false
			}
			status[id] = s.Status
			if s.Status == "ERROR" {
				status[id] += ": " + s.Fault.Message
			}
		}
		return status[first.ID] == "ACTIVE" != (status[second.ID] == "ACTIVE")
	})
	built, failed := first.ID, second.ID
	if status[second.ID] == "ACTIVE" {
		built, failed = second.ID, first.ID
	}
	if want := "ERROR: Port " + port + " is still in use."; status[failed] != want {
		t.Errorf("the server that did not build: %q, want %q", status[failed], want)
	}
	noErr(t, servers.Delete(ctx, c.compute, failed).ExtractErr())
	eventually(t, "the failed server gone", func() bool { return len(lab.Inventory().Servers) == 1 })
	if p := must(ports.Get(ctx, c.network, port).Extract()).ok(t); p.DeviceID != built {
		t.Errorf("the port is bound to %q, want the built server %s", p.DeviceID, built)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		if e.Kind == openstack.ServerError && len(e.Ports) != 0 {
			t.Errorf("the failed build's event carries ports %+v: the lab would tear down the built server's node", e.Ports)
		}
	}
}

func TestServerThatNeverBoots(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{FailBoot: func(name string) bool { return strings.HasSuffix(name, "-02") }})
	c := newClients(t, login(t, lab, "demo", "demo"))
	fx := newFixture(t, c)
	srv := must(servers.Create(t.Context(), c.compute, fx.serverOpts("demo-worker-02", fx.port(t, c, "w2"), nil), nil).Extract()).ok(t)
	eventually(t, "ERROR", func() bool {
		s, err := servers.Get(t.Context(), c.compute, srv.ID).Extract()
		return err == nil && s.Status == "ERROR" && strings.Contains(s.Fault.Message, "never boots")
	})
	inv := lab.Inventory()
	if len(inv.Servers) != 1 || !slices.ContainsFunc(inv.Volumes, func(v openstack.Volume) bool { return v.ServerID == srv.ID }) {
		t.Errorf("inventory %+v", inv)
	}
}

func TestDeleteWhileBuilding(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kinds []openstack.EventKind
	lab := start(t, openstack.Config{
		// the delete lands well inside BUILD, even on a busy machine
		BootDelay: 400 * time.Millisecond, DeleteDelay: 2 * time.Millisecond,
		OnEvent: func(e openstack.Event) { mu.Lock(); kinds = append(kinds, e.Kind); mu.Unlock() },
	})
	c := newClients(t, login(t, lab, "demo", "demo"))
	fx := newFixture(t, c)
	srv := must(servers.Create(t.Context(), c.compute, fx.serverOpts("gone", fx.port(t, c, "gone"), nil), nil).Extract()).ok(t)
	noErr(t, servers.Delete(t.Context(), c.compute, srv.ID).ExtractErr())
	eventually(t, "the server and its volume to be gone", func() bool {
		inv := lab.Inventory()
		return len(inv.Servers) == 0 && len(inv.Volumes) == 0
	})
	time.Sleep(500 * time.Millisecond) // past the boot delay: nothing may boot
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]openstack.EventKind{openstack.ServerDeleted}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
