package openstack

import (
	"context"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// Ports Neutron makes for itself, which use nothing of the cluster's.
const (
	ownerDHCP          = "network:dhcp"
	ownerRouterGateway = "network:router_gateway"
)

// neutronUses reports, for each of several owned Neutron resources of kind
// that share a name, whether something uses it (see settle): a port bound
// to a device, holding a floating IP or whose address another port lets
// through (a reserved VIP port); a floating IP associated with a port; a network with a
// subnet or a port, a subnet with a port on it, a router with an
// interface, a security group guarding a port (ports Neutron makes for
// itself, DHCP and router gateway, do not count). A kind it cannot judge,
// and a read that fails, count as used.
func neutronUses[T any](ctx context.Context, c *Cloud, kind string, attrs func(T) attrs, found []T) ([]bool, error) {
	used := make([]bool, len(found))
	for i, x := range found {
		var err error
		switch v := any(x).(type) {
		case ports.Port:
			used[i], err = c.portUsed(ctx, v)
		case floatingips.FloatingIP:
			used[i] = v.PortID != ""
		default:
			used[i], err = c.portsUse(ctx, kind, attrs(x).id)
		}
		if err != nil {
			return nil, err
		}
	}
	return used, nil
}

// portsUse reports whether a port (or, for a network, a subnet) uses the
// network, subnet, router or security group id of kind.
func (c *Cloud) portsUse(ctx context.Context, kind, id string) (bool, error) {
	var opts ports.ListOpts
	switch kind {
	case kindNetwork:
		subs, err := listAll(ctx, subnets.List(c.network, subnets.ListOpts{NetworkID: id}), subnets.ExtractSubnets)
		if err != nil || len(subs) > 0 {
			return true, wrap(err, "list the subnets of network %s", id)
		}
		opts.NetworkID = id
	case kindSubnet:
		opts.FixedIPs = []ports.FixedIPOpts{{SubnetID: id}}
	case kindRouter:
		opts.DeviceID = id
	case kindSecurityGroup:
		opts.SecurityGroups = []string{id}
	default:
		return true, nil
	}
	list, err := listAll(ctx, ports.List(c.network, opts), ports.ExtractPorts)
	if err != nil {
		return true, wrap(err, "list the ports using %s %s", kindWord(kind), id)
	}
	return slices.ContainsFunc(list, func(p ports.Port) bool {
		return p.DeviceOwner != ownerDHCP && p.DeviceOwner != ownerRouterGateway
	}), nil
}

// portUsed reports whether p is bound to a device, holds a floating IP, or
// has an address another port of its network lets through (the VIP ports
// are bound to nothing).
func (c *Cloud) portUsed(ctx context.Context, p ports.Port) (bool, error) {
	if p.DeviceID != "" {
		return true, nil
	}
	fips, err := listAll(ctx, floatingips.List(c.network, floatingips.ListOpts{PortID: p.ID}), floatingips.ExtractFloatingIPs)
	if err != nil || len(fips) > 0 {
		return true, wrap(err, "list the floating ips of port %s", p.ID)
	}
	peers, err := listAll(ctx, ports.List(c.network, ports.ListOpts{NetworkID: p.NetworkID}), ports.ExtractPorts)
	if err != nil {
		return true, wrap(err, "list the ports of network %s", p.NetworkID)
	}
	return slices.ContainsFunc(peers, func(q ports.Port) bool {
		return slices.ContainsFunc(q.AllowedAddressPairs, func(pair ports.AddressPair) bool {
			return slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return ip.IPAddress == pair.IPAddress })
		})
	}), nil
}
