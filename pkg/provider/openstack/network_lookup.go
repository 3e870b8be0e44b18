package openstack

import (
	"context"
	"net/url"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// The lookups of the cluster's Neutron resources: each lists the
// same-named candidates (floating IPs: the same-described ones) in one
// call, for the reads and for settling a create whose answer was lost.

func (c *Cloud) sgLookup(n netNames) lookup[groups.SecGroup] {
	return lookup[groups.SecGroup]{
		kind: kindSecurityGroup, collection: "security-groups", name: n.sg, tags: ClusterTags(n.cluster),
		attrs: sgAttrs, del: c.deleteSecurityGroup,
		list: func(ctx context.Context) ([]groups.SecGroup, error) {
			return listAll(ctx, groups.List(c.network, groups.ListOpts{Name: n.sg, ProjectID: c.projectID}), groups.ExtractGroups)
		},
	}
}

func (c *Cloud) netLookup(n netNames) lookup[network] {
	return lookup[network]{
		kind: kindNetwork, collection: "networks", name: n.net, tags: ClusterTags(n.cluster),
		attrs: netAttrs, del: c.deleteNetwork,
		list: func(ctx context.Context) ([]network, error) {
			return listAll(ctx, networks.List(c.network, networks.ListOpts{Name: n.net, ProjectID: c.projectID}), extractNetworks)
		},
	}
}

func (c *Cloud) subnetLookup(n netNames) lookup[subnets.Subnet] {
	return lookup[subnets.Subnet]{
		kind: kindSubnet, collection: "subnets", name: n.subnet, tags: ClusterTags(n.cluster),
		attrs: subnetAttrs, del: c.deleteSubnet,
		list: func(ctx context.Context) ([]subnets.Subnet, error) {
			return listAll(ctx, subnets.List(c.network, subnets.ListOpts{Name: n.subnet, ProjectID: c.projectID}), subnets.ExtractSubnets)
		},
	}
}

func (c *Cloud) routerLookup(n netNames) lookup[routers.Router] {
	return lookup[routers.Router]{
		kind: kindRouter, collection: "routers", name: n.router, tags: ClusterTags(n.cluster),
		attrs: routerAttrs, del: c.deleteRouter,
		list: func(ctx context.Context) ([]routers.Router, error) {
			return listAll(ctx, routers.List(c.network, routers.ListOpts{Name: n.router, ProjectID: c.projectID}), routers.ExtractRouters)
		},
	}
}

// portLookup is the port name on network, tagged tags.
func (c *Cloud) portLookup(network, name string, tags []string) lookup[ports.Port] {
	return lookup[ports.Port]{
		kind: kindPort, collection: "ports", name: name, tags: tags,
		attrs: portAttrs, del: c.deletePort,
		list: func(ctx context.Context) ([]ports.Port, error) {
			return listAll(ctx, ports.List(c.network, ports.ListOpts{NetworkID: network, Name: name, ProjectID: c.projectID}), ports.ExtractPorts)
		},
	}
}

// fipLookup is the floating IP name of cluster.
func (c *Cloud) fipLookup(cluster, name string) lookup[floatingips.FloatingIP] {
	return lookup[floatingips.FloatingIP]{
		kind: kindFloatingIP, collection: "floatingips", name: name, tags: ClusterTags(cluster),
		attrs: fipAttrs, del: c.deleteFloatingIP,
		list: func(ctx context.Context) ([]floatingips.FloatingIP, error) {
			return c.fipsDescribed(ctx, cluster, name)
		},
	}
}

// fipsDescribed lists the credential's project's floating IPs described
// as any of names, with or without a marker.
func (c *Cloud) fipsDescribed(ctx context.Context, cluster string, names ...string) ([]floatingips.FloatingIP, error) {
	q := neutronQuery{"project_id": {c.projectID}}
	for _, n := range names {
		q["description"] = append(append(q["description"], n), c.owner(cluster).descriptions(n)...)
	}
	return listAll(ctx, floatingips.List(c.network, q), floatingips.ExtractFloatingIPs)
}

// taggedQuery lists the credential's project's resources tagged with
// cluster's tag (Neutron (Zed) answers 500 to tags combined with tags-any:
// the managed-by marker is checked by the caller).
func (c *Cloud) taggedQuery(cluster string) neutronQuery {
	return neutronQuery{"project_id": {c.projectID}, "tags": {ClusterTag(cluster)}}
}

// neutronQuery is a Neutron list filter; a repeated filter matches any of
// its values (Neutron ORs them).
type neutronQuery url.Values

func (q neutronQuery) query() (string, error) { return "?" + url.Values(q).Encode(), nil }

// ToFloatingIPListQuery makes q a floatingips.ListOptsBuilder.
func (q neutronQuery) ToFloatingIPListQuery() (string, error) { return q.query() }

// ToPortListQuery makes q a ports.ListOptsBuilder.
func (q neutronQuery) ToPortListQuery() (string, error) { return q.query() }

// ToRouterListQuery makes q a routers.ListOptsBuilder.
func (q neutronQuery) ToRouterListQuery() (string, error) { return q.query() }

// ToSubnetListQuery makes q a subnets.ListOptsBuilder.
func (q neutronQuery) ToSubnetListQuery() (string, error) { return q.query() }

// ToNetworkListQuery makes q a networks.ListOptsBuilder.
func (q neutronQuery) ToNetworkListQuery() (string, error) { return q.query() }

func sgAttrs(x groups.SecGroup) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }

func netAttrs(x network) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }

func subnetAttrs(x subnets.Subnet) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }

func routerAttrs(x routers.Router) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }

func portAttrs(x ports.Port) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }

func fipAttrs(x floatingips.FloatingIP) attrs { return attrs{x.ID, x.Description, x.ProjectID, x.Tags} }
