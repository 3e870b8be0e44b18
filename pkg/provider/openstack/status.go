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

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// Status reports the cloud (never the credential) and counts, by kind,
// the cluster's owned servers and network resources: one tag-filtered
// list per kind, nothing changed.
func (c *Cloud) Status(ctx context.Context, cluster *config.Cluster) (*provider.Status, error) {
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
	// Neutron (Zed) answers 500 to tags combined with tags-any: filter by the
	// cluster tag and check the managed-by marker here.
	tags := ClusterTag(name)
	for _, k := range []struct {
		kind  string
		count func() (int, error)
	}{
		{"ports", func() (int, error) {
			return countOwned(ctx, ports.List(c.network, ports.ListOpts{Tags: tags}), ports.ExtractPorts, func(x ports.Port) []string { return x.Tags }, name)
		}},
		{"floatingips", func() (int, error) {
			return countOwned(ctx, floatingips.List(c.network, floatingips.ListOpts{Tags: tags}), floatingips.ExtractFloatingIPs, func(x floatingips.FloatingIP) []string { return x.Tags }, name)
		}},
		{"networks", func() (int, error) {
			return countOwned(ctx, networks.List(c.network, networks.ListOpts{Tags: tags}), networks.ExtractNetworks, func(x networks.Network) []string { return x.Tags }, name)
		}},
		{"subnets", func() (int, error) {
			return countOwned(ctx, subnets.List(c.network, subnets.ListOpts{Tags: tags}), subnets.ExtractSubnets, func(x subnets.Subnet) []string { return x.Tags }, name)
		}},
		{"routers", func() (int, error) {
			return countOwned(ctx, routers.List(c.network, routers.ListOpts{Tags: tags}), routers.ExtractRouters, func(x routers.Router) []string { return x.Tags }, name)
		}},
		{"security_groups", func() (int, error) {
			return countOwned(ctx, groups.List(c.network, groups.ListOpts{Tags: tags}), groups.ExtractGroups, func(x groups.SecGroup) []string { return x.Tags }, name)
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

// countOwned counts the listed resources that carry cluster's ownership
// markers.
func countOwned[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error), tags func(T) []string, cluster string) (int, error) {
	pages, err := pager.AllPages(ctx)
	if err != nil {
		return 0, err
	}
	list, err := extract(pages)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range list {
		if Owned(tags(x), cluster) {
			n++
		}
	}
	return n, nil
}
