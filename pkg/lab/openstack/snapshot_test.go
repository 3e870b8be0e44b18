package openstack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/openstack"
)

// TestSnapshotSeesEverything: an untagged duplicate of a tagged network, a
// detached volume and an extra security group rule, each made through the
// OpenStack APIs, are each one line more in the whole-inventory diff, and
// the snapshot names no id.
func TestSnapshotSeesEverything(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	n := must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "demo-net"}).Extract()).ok(t)
	must(attributestags.ReplaceAll(ctx, c.network, "networks", n.ID, attributestags.ReplaceAllOpts{Tags: ownerTags()}).Extract()).ok(t)
	sg := must(groups.Create(ctx, c.network, groups.CreateOpts{Name: "demo-nodes"}).Extract()).ok(t)
	was := lab.Snapshot()
	if diff := inventory.Diff(was, lab.Snapshot()); diff != nil {
		t.Fatalf("two snapshots of one inventory differ: %q", diff)
	}
	for _, id := range []string{n.ID, sg.ID, lab.ExternalNetwork()} {
		if strings.Contains(was.String(), id) {
			t.Errorf("the snapshot names id %s:\n%s", id, was)
		}
	}

	must(networks.Create(ctx, c.network, networks.CreateOpts{Name: "demo-net"}).Extract()).ok(t)
	v := must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "data", Size: 1}, nil).Extract()).ok(t)
	eventually(t, "available", func() bool {
		got, err := volumes.Get(ctx, c.volume, v.ID).Extract()
		return err == nil && got.Status == "available"
	})
	must(rules.Create(ctx, c.network, rules.CreateOpts{
		SecGroupID: sg.ID, Direction: rules.DirIngress, EtherType: rules.EtherType4, Protocol: rules.ProtocolTCP,
		PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "0.0.0.0/0",
	}).Extract()).ok(t)
	got := inventory.Diff(was, lab.Snapshot())
	want := []string{
		"+ network demo-net project=demo mtu=1450 port-security=true up=true",
		"+ security-group-rule demo-nodes project=demo direction=ingress ethertype=IPv4 protocol=tcp ports=22 remote-ip=0.0.0.0/0",
		"+ volume data project=demo status=available size=1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
