package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/talosc/talosc/pkg/provider"
)

// Status reports the cloud (never the credential) and counts, by kind,
// the cluster's owned servers and network resources: one tag-filtered
// list per kind, nothing changed.
func (c *Cloud) Status(ctx context.Context) (*provider.Status, error) {
	cluster := c.cluster
	st := &provider.Status{
		Summary:   fmt.Sprintf("openstack: %s (region %s, project %s)", c.url, c.region, c.project),
		Details:   map[string]string{"url": c.url, "region": c.region, "project": c.project},
		Resources: map[string]int{},
	}
	name := cluster.Name
	owned, err := c.ownedServers(ctx, name)
	if err != nil {
		return nil, err
	}
	st.Resources["servers"] = len(owned)
	o, tag := c.owner(name), c.taggedQuery(name)
	for _, k := range []struct {
		kind  string
		count func() (int, error)
	}{
		{"ports", func() (int, error) {
			return countOwned(ctx, o, ports.List(c.network, tag), ports.ExtractPorts, portAttrs)
		}},
		{"floatingips", func() (int, error) {
			return countOwned(ctx, o, floatingips.List(c.network, tag), floatingips.ExtractFloatingIPs, fipAttrs)
		}},
		{"networks", func() (int, error) {
			return countOwned(ctx, o, networks.List(c.network, tag), extractNetworks, netAttrs)
		}},
		{"subnets", func() (int, error) {
			return countOwned(ctx, o, subnets.List(c.network, tag), subnets.ExtractSubnets, subnetAttrs)
		}},
		{"routers", func() (int, error) {
			return countOwned(ctx, o, routers.List(c.network, tag), routers.ExtractRouters, routerAttrs)
		}},
		{"security_groups", func() (int, error) {
			return countOwned(ctx, o, groups.List(c.network, groups.ListOpts{Tags: ClusterTag(name), ProjectID: c.projectID}), groups.ExtractGroups, sgAttrs)
		}},
	} {
		n, err := k.count()
		if err != nil {
			return nil, wrap(err, "count the neutron %s of cluster %s", k.kind, name)
		}
		st.Resources[k.kind] = n
	}
	return st, nil
}

// countOwned counts the listed resources that carry o's ownership tags.
func countOwned[T any](ctx context.Context, o owner, pager pagination.Pager, extract func(pagination.Page) ([]T, error), attrsOf func(T) attrs) (int, error) {
	list, err := listAll(ctx, pager, extract)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range list {
		if o.tagged(attrsOf(x)) {
			n++
		}
	}
	return n, nil
}
