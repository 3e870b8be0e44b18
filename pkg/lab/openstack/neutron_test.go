package openstack_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// ownerTags are the tags talosc puts on every resource of cluster "demo".
func ownerTags() []string { return []string{"managed-by=taloscluster", "cluster=demo"} }

// withTags adds "tags" to a create body, as talosc does for Neutron POSTs.
type withTags struct {
	build func() (map[string]any, error)
	key   string
	tags  []string
}

func (w withTags) body() (map[string]any, error) {
	b, err := w.build()
	if err == nil {
		b[w.key].(map[string]any)["tags"] = w.tags
	}
	return b, err
}

func (w withTags) ToNetworkCreateMap() (map[string]any, error) { return w.body() }

// result carries a call's value and error until a test checks it.
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

// ok fails the test on an error and returns the value.
func (r result[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNetworkPhase does what talosc's network phase does on an empty cloud,
// then tears it down like destroy.
func TestNetworkPhase(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []openstack.Event
	lab := start(t, openstack.Config{OnEvent: func(e openstack.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx, net := t.Context(), c.network

	// Zed refuses tags in POST: talosc must tag right after creating.
	tagged := withTags{build: mtu.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "demo-net"}, MTU: 1450}.ToNetworkCreateMap, key: "network", tags: ownerTags()}
	_, err := networks.Create(ctx, net, tagged).Extract()
	wantCode(t, err, http.StatusBadRequest, `"type":"HTTPBadRequest"`, "Attribute 'tags' not allowed in POST")
	_, err = networks.Create(ctx, net, mtu.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "demo-net"}, MTU: 9000}).Extract()
	wantCode(t, err, http.StatusBadRequest, "Requested MTU is too big, maximum is 1450.")
	n := must(networks.Create(ctx, net, mtu.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: "demo-net"}, MTU: 1450}).Extract()).ok(t)
	tags := must(attributestags.ReplaceAll(ctx, net, "networks", n.ID, attributestags.ReplaceAllOpts{Tags: ownerTags()}).Extract()).ok(t)
	if diff := cmp.Diff([]string{"cluster=demo", "managed-by=taloscluster"}, tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}

	sn := must(subnets.Create(ctx, net, subnets.CreateOpts{NetworkID: n.ID, Name: "demo-subnet", CIDR: "127.42.0.0/24", IPVersion: 4, DNSNameservers: []string{"1.1.1.1"}}).Extract()).ok(t)
	if sn.GatewayIP != "127.42.0.1" || sn.AllocationPools[0].Start != "127.42.0.2" {
		t.Errorf("subnet defaults: %+v", sn)
	}
	dns := []string{"9.9.9.9", "1.1.1.1"}
	sn = must(subnets.Update(ctx, net, sn.ID, subnets.UpdateOpts{DNSNameservers: &dns}).Extract()).ok(t)
	if diff := cmp.Diff(dns, sn.DNSNameservers); diff != "" {
		t.Errorf("dns in place (-want +got):\n%s", diff)
	}
	_, err = subnets.Create(ctx, net, subnets.CreateOpts{NetworkID: n.ID, CIDR: "127.42.0.128/25", IPVersion: 4}).Extract()
	wantCode(t, err, http.StatusBadRequest, "overlaps with another subnet")

	rt := must(routers.Create(ctx, net, routers.CreateOpts{Name: "demo-router", GatewayInfo: &routers.GatewayInfo{NetworkID: lab.ExternalNetwork()}}).Extract()).ok(t)
	if ips := rt.GatewayInfo.ExternalFixedIPs; len(ips) != 1 || !strings.HasPrefix(ips[0].IPAddress, "127.202.0.") {
		t.Errorf("gateway %+v", rt.GatewayInfo)
	}
	must(routers.AddInterface(ctx, net, rt.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract()).ok(t)
	_, err = routers.AddInterface(ctx, net, rt.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract()
	wantCode(t, err, http.StatusBadRequest, "already has a port on subnet")

	sg := must(groups.Create(ctx, net, groups.CreateOpts{Name: "demo", Description: "demo kubernetes cluster security group"}).Extract()).ok(t)
	for _, r := range []rules.CreateOpts{
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolICMP},
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 443, PortRangeMax: 443},
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 1, PortRangeMax: 65535, RemoteGroupID: sg.ID},
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolUDP, PortRangeMin: 1, PortRangeMax: 65535, RemoteGroupID: sg.ID},
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 50000, PortRangeMax: 50000, RemoteIPPrefix: "100.64.0.0/10"},
	} {
		must(rules.Create(ctx, net, r).Extract()).ok(t)
	}
	_, err = rules.Create(ctx, net, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: "6", PortRangeMin: 443, PortRangeMax: 443}).Extract()
	wantCode(t, err, http.StatusConflict, `"type":"SecurityGroupRuleExists"`, "Security group rule already exists. Rule id is")
	_, err = rules.Create(ctx, net, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: sg.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 2, PortRangeMax: 1}).Extract()
	wantCode(t, err, http.StatusBadRequest, "port_range_min must be <= port_range_max")
	sgAfter := must(groups.Get(ctx, net, sg.ID).Extract()).ok(t)
	if len(sgAfter.Rules) != 7 { // 2 default egress + 5
		t.Errorf("%d rules", len(sgAfter.Rules))
	}

	sgs := []string{sg.ID}
	vip := must(ports.Create(ctx, net, ports.CreateOpts{
		NetworkID: n.ID, Name: "demo-kubeapi", SecurityGroups: &sgs,
		FixedIPs: []ports.IP{{SubnetID: sn.ID, IPAddress: "127.42.0.5"}},
	}).Extract()).ok(t)
	_, err = ports.Create(ctx, net, ports.CreateOpts{NetworkID: n.ID, FixedIPs: []ports.IP{{IPAddress: "127.42.0.5"}}}).Extract()
	wantCode(t, err, http.StatusConflict, `"type":"IpAddressAlreadyAllocated"`, "IP address 127.42.0.5 already allocated in subnet "+sn.ID)
	machine := must(ports.Create(ctx, net, ports.CreateOpts{
		NetworkID: n.ID, Name: "demo-controlplane-01", MACAddress: "02:aa:bb:cc:dd:ee",
		SecurityGroups: &sgs, AllowedAddressPairs: []ports.AddressPair{{IPAddress: "127.42.0.5"}},
	}).Extract()).ok(t)
	if machine.FixedIPs[0].IPAddress != "127.42.0.2" || machine.AllowedAddressPairs[0].MACAddress != "02:aa:bb:cc:dd:ee" {
		t.Errorf("machine port %+v", machine)
	}
	for _, id := range []string{vip.ID, machine.ID} {
		must(attributestags.ReplaceAll(ctx, net, "ports", id, attributestags.ReplaceAllOpts{Tags: ownerTags()}).Extract()).ok(t)
	}
	off := false
	_, err = ports.Create(ctx, net, portsecurity.PortCreateOptsExt{CreateOptsBuilder: ports.CreateOpts{
		NetworkID:           n.ID,
		AllowedAddressPairs: []ports.AddressPair{{IPAddress: "127.42.0.5"}}, SecurityGroups: &[]string{},
	}, PortSecurityEnabled: &off}).Extract()
	wantCode(t, err, http.StatusConflict, "AddressPairAndPortSecurityRequired")

	fip := must(floatingips.Create(ctx, net, floatingips.CreateOpts{FloatingNetworkID: lab.ExternalNetwork(), Description: "demo-kubeapi", PortID: vip.ID}).Extract()).ok(t)
	if fip.Status != "ACTIVE" || fip.FixedIP != "127.42.0.5" || fip.RouterID != rt.ID || !strings.HasPrefix(fip.FloatingIP, "127.202.0.") {
		t.Errorf("floating IP %+v", fip)
	}
	found := must(floatingips.List(net, floatingips.ListOpts{Description: "demo-kubeapi"}).AllPages(ctx)).ok(t)
	if list, _ := floatingips.ExtractFloatingIPs(found); len(list) != 1 {
		t.Errorf("FIPs by description: %+v", list)
	}
	page := must(ports.List(net, ports.ListOpts{Tags: strings.Join(ownerTags(), ",")}).AllPages(ctx)).ok(t)
	if list, _ := ports.ExtractPorts(page); len(list) != 2 {
		t.Errorf("ports by tags: %d", len(list))
	}
	page = must(ports.List(net, ports.ListOpts{Name: "demo-controlplane-01"}).AllPages(ctx)).ok(t)
	if list, _ := ports.ExtractPorts(page); len(list) != 1 || list[0].ID != machine.ID {
		t.Errorf("ports by name: %+v", list)
	}
	if diff := cmp.Diff(map[string]int{"networks": 1, "ports": 2}, lab.Owned(ownerTags()...)); diff != "" {
		t.Errorf("owned (-want +got):\n%s", diff)
	}

	// Destroy, in an order the API accepts.
	err = subnets.Delete(ctx, net, sn.ID).ExtractErr()
	wantCode(t, err, http.StatusConflict, "SubnetInUse")
	err = ports.Delete(ctx, net, rt.ID).ExtractErr()
	wantCode(t, err, http.StatusNotFound, "PortNotFound")
	_, err = routers.RemoveInterface(ctx, net, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()
	wantCode(t, err, http.StatusConflict, "RouterInterfaceInUseByFloatingIP")
	noErr(t, floatingips.Delete(ctx, net, fip.ID).ExtractErr())
	noErr(t, ports.Delete(ctx, net, vip.ID).ExtractErr())
	noErr(t, ports.Delete(ctx, net, machine.ID).ExtractErr())
	must(routers.RemoveInterface(ctx, net, rt.ID, routers.RemoveInterfaceOpts{SubnetID: sn.ID}).Extract()).ok(t)
	noErr(t, routers.Delete(ctx, net, rt.ID).ExtractErr())
	noErr(t, subnets.Delete(ctx, net, sn.ID).ExtractErr())
	noErr(t, networks.Delete(ctx, net, n.ID).ExtractErr())
	noErr(t, groups.Delete(ctx, net, sg.ID).ExtractErr())
	if got := lab.Owned(ownerTags()...); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	kinds := []openstack.EventKind{}
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]openstack.EventKind{openstack.FloatingIPAssociated, openstack.FloatingIPReleased}, kinds); diff != "" || events[1].FloatingIP.FixedIPAddress != "127.42.0.5" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestNeutronTagsInPOSTKnob(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{NeutronTagsInPOST: true})
	c := newClients(t, login(t, lab, "demo", "demo"))
	n := must(networks.Create(t.Context(), c.network, withTags{build: networks.CreateOpts{Name: "n"}.ToNetworkCreateMap, key: "network", tags: ownerTags()}).Extract()).ok(t)
	if diff := cmp.Diff([]string{"cluster=demo", "managed-by=taloscluster"}, n.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	all := must(extensions.List(c.network).AllPages(t.Context())).ok(t)
	exts, _ := extensions.ExtractExtensions(all)
	if !slices.ContainsFunc(exts, func(e extensions.Extension) bool { return e.Alias == "tag-creation" }) {
		t.Error("tag-creation extension not listed")
	}
	page := must(networks.List(c.network, networks.ListOpts{TagsAny: "cluster=demo,x", NotTags: "y"}).AllPages(t.Context())).ok(t)
	if list, _ := networks.ExtractNetworks(page); len(list) != 1 {
		t.Errorf("networks by tags-any: %d", len(list))
	}
	// Zed's Neutron fails a list filtered by tags and tags-any together.
	_, err := networks.List(c.network, networks.ListOpts{Tags: "cluster=demo", TagsAny: "x"}).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Errorf("tags with tags-any = %v, want Neutron's 500", err)
	}
}

func TestNeutronErrorsAndPolicy(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx, net := t.Context(), c.network
	_, err := networks.Get(ctx, net, "nope").Extract()
	wantCode(t, err, http.StatusNotFound, `{"NeutronError":{"detail":"","message":"Network nope could not be found.","type":"NetworkNotFound"}}`)
	yes := true
	_, err = networks.Create(ctx, net, networks.CreateOpts{Name: "x", Shared: &yes}).Extract()
	wantCode(t, err, http.StatusForbidden, "disallowed by policy")
	n := must(networks.Create(ctx, net, networks.CreateOpts{Name: "lonely"}).Extract()).ok(t)
	sn := must(subnets.Create(ctx, net, subnets.CreateOpts{NetworkID: n.ID, CIDR: "127.43.0.0/24", IPVersion: 4}).Extract()).ok(t)
	p := must(ports.Create(ctx, net, ports.CreateOpts{NetworkID: n.ID}).Extract()).ok(t)
	_, err = floatingips.Create(ctx, net, floatingips.CreateOpts{FloatingNetworkID: lab.ExternalNetwork(), PortID: p.ID}).Extract()
	wantCode(t, err, http.StatusNotFound, "is not reachable from subnet "+sn.ID)
	err = networks.Delete(ctx, net, n.ID).ExtractErr()
	wantCode(t, err, http.StatusConflict, "NetworkInUse")
	_, err = ports.Update(ctx, net, p.ID, ports.UpdateOpts{Name: new("x"), RevisionNumber: new(7)}).Extract()
	wantCode(t, err, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed")
	_, err = ports.List(net, ports.ListOpts{Status: "ACTIVE", DeviceOwner: "x"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Non-admins do not see other projects' resources; the external
	// network is visible to everyone.
	admin := newClients(t, login(t, lab, "admin", "admin"))
	_, err = ports.Get(ctx, admin.network, p.ID).Extract()
	if err != nil {
		t.Errorf("admin sees every port: %v", err)
	}
	adminNet := must(networks.Create(ctx, admin.network, networks.CreateOpts{Name: "admin-only"}).Extract()).ok(t)
	_, err = networks.Get(ctx, net, adminNet.ID).Extract()
	wantCode(t, err, http.StatusNotFound, "could not be found")
	must(networks.Get(ctx, net, lab.ExternalNetwork()).Extract()).ok(t)
}
