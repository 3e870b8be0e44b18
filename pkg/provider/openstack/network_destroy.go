package openstack

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/talosc/talosc/pkg/provider"
)

// doomed is one owned resource a run deletes.
type doomed struct {
	kind, name, id string
	del            func(ctx context.Context, id string) error
	// why is the change's detail ("" in destroy, where everything goes).
	why string
}

// DestroyNetwork is provider.Networks.DestroyNetwork: every resource
// carrying the cluster's ownership tags goes, in dependency order: floating
// IPs, ports, router interfaces, routers, subnets, networks, security
// groups. The reads come first; a port still bound to a server (the nodes
// phase deletes servers before the network) fails before any change.
func (c *Cloud) DestroyNetwork(ctx context.Context, plan *provider.Plan) error {
	cluster := c.cluster
	all, err := c.readOwnedNetwork(ctx, cluster.Name)
	if err != nil {
		return err
	}
	for _, d := range all {
		if err := c.deleteNeutron(ctx, plan, d); err != nil {
			return err
		}
	}
	return nil
}

// readOwnedNetwork lists the cluster's owned network resources (one call
// per kind by tag, one by description marker for what a run ended before
// tagging, plus one per router for its interfaces), in the order they must
// be deleted. It lists by the cluster tag and checks both markers itself,
// so resources with the legacy managed-by marker go too. Every list is of
// the credential's project alone, and what it returns is checked to be of
// that project: an admin's lists show every project's (I-F6).
func (c *Cloud) readOwnedNetwork(ctx context.Context, cluster string) ([]doomed, error) {
	o, n := c.owner(cluster), namesOf(cluster)
	tag := c.taggedQuery(cluster)
	marked := neutronQuery{"project_id": {c.projectID}, "description": o.descriptions("")}
	fipDesc := neutronQuery{"project_id": {c.projectID}, "description": append(o.descriptions(n.kubeapi), o.descriptions(n.ingress)...)}
	fips, err := listOwned(ctx, o, floatingips.ExtractFloatingIPs, fipAttrs, floatingips.List(c.network, tag), floatingips.List(c.network, fipDesc))
	if err != nil {
		return nil, wrap(err, "list the floating ips of cluster %s", cluster)
	}
	var out []doomed
	for _, f := range fips {
		out = append(out, doomed{kind: kindFloatingIP, name: cmp.Or(o.base(f.Description), f.FloatingIP), id: f.ID, del: c.deleteFloatingIP})
	}
	ps, err := c.readOwnedPorts(ctx, o, tag, marked)
	if err != nil {
		return nil, err
	}
	out = append(out, ps...)
	rts, err := c.readOwnedRouters(ctx, o, tag, marked)
	if err != nil {
		return nil, err
	}
	out = append(out, rts...)
	rest, err := c.readOwnedSubnetsNetworksGroups(ctx, o, tag, marked)
	if err != nil {
		return nil, err
	}
	return append(out, rest...), nil
}

// readOwnedPorts lists the cluster's owned ports to delete; it refuses
// one still bound to a server.
func (c *Cloud) readOwnedPorts(ctx context.Context, o owner, tag, marked neutronQuery) ([]doomed, error) {
	ps, err := listOwned(ctx, o, ports.ExtractPorts, portAttrs, ports.List(c.network, tag), ports.List(c.network, marked))
	if err != nil {
		return nil, wrap(err, "list the ports of cluster %s", o.cluster)
	}
	var out []doomed
	for _, p := range ps {
		if p.DeviceID != "" && !strings.HasPrefix(p.DeviceOwner, "network:") {
			return nil, fmt.Errorf("port %s (%s) is still bound to server %s: delete the machine first (destroy deletes servers before the network)", p.Name, p.ID, p.DeviceID)
		}
		out = append(out, doomed{kind: kindPort, name: p.Name, id: p.ID, del: c.deletePort})
	}
	return out, nil
}

// readOwnedRouters lists the interfaces of the cluster's owned routers,
// then the routers, in the order they must be deleted.
func (c *Cloud) readOwnedRouters(ctx context.Context, o owner, tag, marked neutronQuery) ([]doomed, error) {
	rts, err := listOwned(ctx, o, routers.ExtractRouters, routerAttrs, routers.List(c.network, tag), routers.List(c.network, marked))
	if err != nil {
		return nil, wrap(err, "list the routers of cluster %s", o.cluster)
	}
	var out []doomed
	for _, rt := range rts {
		ifaces, err := listAll(ctx, ports.List(c.network, ports.ListOpts{DeviceID: rt.ID, DeviceOwner: ownerRouterInterface}), ports.ExtractPorts)
		if err != nil {
			return nil, wrap(err, "list the interfaces of router %s", rt.Name)
		}
		for _, p := range ifaces {
			out = append(out, doomed{kind: kindRouterInterface, name: rt.Name, id: p.ID, del: func(ctx context.Context, id string) error {
				return routers.RemoveInterface(ctx, c.network, rt.ID, routers.RemoveInterfaceOpts{PortID: id}).Err
			}})
		}
	}
	for _, rt := range rts {
		out = append(out, doomed{kind: kindRouter, name: rt.Name, id: rt.ID, del: c.deleteRouter})
	}
	return out, nil
}

// readOwnedSubnetsNetworksGroups lists the cluster's owned subnets,
// networks and security groups, in the order they must be deleted.
func (c *Cloud) readOwnedSubnetsNetworksGroups(ctx context.Context, o owner, tag, marked neutronQuery) ([]doomed, error) {
	cluster := o.cluster
	sns, err := listOwned(ctx, o, subnets.ExtractSubnets, subnetAttrs, subnets.List(c.network, tag), subnets.List(c.network, marked))
	if err != nil {
		return nil, wrap(err, "list the subnets of cluster %s", cluster)
	}
	var out []doomed
	for _, sn := range sns {
		out = append(out, doomed{kind: kindSubnet, name: sn.Name, id: sn.ID, del: c.deleteSubnet})
	}
	nets, err := listOwned(ctx, o, extractNetworks, netAttrs, networks.List(c.network, tag), networks.List(c.network, marked))
	if err != nil {
		return nil, wrap(err, "list the networks of cluster %s", cluster)
	}
	for _, x := range nets {
		out = append(out, doomed{kind: kindNetwork, name: x.Name, id: x.ID, del: c.deleteNetwork})
	}
	sgDesc := o.descriptions(sgDescription(cluster)) // groups.List takes one description: one list per marker
	sgs, err := listOwned(ctx, o, groups.ExtractGroups, sgAttrs, groups.List(c.network, groups.ListOpts{Tags: ClusterTag(cluster), ProjectID: c.projectID}),
		groups.List(c.network, groups.ListOpts{Description: sgDesc[0], ProjectID: c.projectID}), groups.List(c.network, groups.ListOpts{Description: sgDesc[1], ProjectID: c.projectID}))
	if err != nil {
		return nil, wrap(err, "list the security groups of cluster %s", cluster)
	}
	for _, g := range sgs {
		out = append(out, doomed{kind: kindSecurityGroup, name: g.Name, id: g.ID, del: c.deleteSecurityGroup})
	}
	return out, nil
}

// listOwned lists through each pager and keeps, once, what o owns (see
// owner.owns).
func listOwned[T any](ctx context.Context, o owner, extract func(pagination.Page) ([]T, error), attrsOf func(T) attrs, pagers ...pagination.Pager) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	for _, pager := range pagers {
		all, err := listAll(ctx, pager, extract)
		if err != nil {
			return nil, err
		}
		for _, x := range all {
			a := attrsOf(x)
			if !seen[a.id] && o.owns(a) {
				seen[a.id] = true
				out = append(out, x)
			}
		}
	}
	return out, nil
}
