package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// ownerRouterInterface is the device_owner of a router's interface port.
const ownerRouterInterface = "network:router_interface"

// network is a Neutron network with its MTU (net-mtu extension).
type network struct {
	networks.Network
	mtu.NetworkMTUExt
}

// netInventory is what the reads found of one cluster's network: owned
// resources only (every same-named unowned one was refused while reading).
// The reconcile steps record what they create here, so the result of a
// real run is read from it; in a dry run missing pieces stay nil.
type netInventory struct {
	names    netNames
	owner    owner
	cidr     netip.Prefix
	external string // the external network's id
	sg       *groups.SecGroup
	net      *network
	subnet   *subnets.Subnet
	router   *routers.Router
	iface    bool                               // the router has an interface on the subnet
	ports    map[string]*ports.Port             // desired ports (reserved and machines) by name
	orphans  []ports.Port                       // unbound owned machine ports of undesired machines without a server
	fips     map[string]*floatingips.FloatingIP // by name (their description without the marker)
	untagged []untagged                         // owned by description, to be tagged
	twins    []doomed                           // unused second owned resources of a name, to delete
}

// readNetwork makes every read the reconcile needs, in a constant number of
// list calls (by name, by network, by description), and refuses what may
// not be adopted before anything is changed.
func (c *Cloud) readNetwork(ctx context.Context, spec provider.NetworkSpec) (*netInventory, error) {
	cfg := c.cluster
	if cfg.OpenStack == nil {
		return nil, errors.New("openstack: cluster.yaml has no openstack section")
	}
	n := namesOf(cfg.Name)
	inv := &netInventory{names: n, owner: c.owner(cfg.Name), cidr: cfg.Network.Cluster.CIDR, ports: map[string]*ports.Port{}, fips: map[string]*floatingips.FloatingIP{}}
	var err error
	if inv.external, err = c.externalNetwork(ctx, cfg.OpenStack.ExternalNet); err != nil {
		return nil, err
	}
	if inv.sg, err = findOwned(ctx, c, inv, c.sgLookup(n)); err != nil {
		return nil, err
	}
	if inv.net, err = findOwned(ctx, c, inv, c.netLookup(n)); err != nil {
		return nil, err
	}
	if inv.subnet, err = findOwned(ctx, c, inv, c.subnetLookup(n)); err != nil {
		return nil, err
	}
	if err := inv.checkSubnet(); err != nil {
		return nil, err
	}
	if inv.router, err = findOwned(ctx, c, inv, c.routerLookup(n)); err != nil {
		return nil, err
	}
	if err := c.readPorts(ctx, inv, spec.Machines); err != nil {
		return nil, err
	}
	return inv, c.readFloatingIPs(ctx, inv)
}

// checkSubnet refuses a subnet Neutron cannot change into the desired one
// (reference I-9).
func (inv *netInventory) checkSubnet() error {
	sn := inv.subnet
	if sn != nil && (inv.net == nil || sn.NetworkID != inv.net.ID) {
		return fmt.Errorf("subnet %s (%s) is not on network %s: delete the subnet, or destroy and recreate the cluster", sn.Name, sn.ID, inv.names.net)
	}
	return inv.checkCIDR()
}

// checkCIDR refuses a cluster subnet whose cidr is not network.cluster.cidr.
func (inv *netInventory) checkCIDR() error {
	if sn := inv.subnet; sn != nil && sn.CIDR != inv.cidr.String() {
		return fmt.Errorf("network.cluster.cidr is %s but subnet %s (%s) has %s, and Neutron cannot change a subnet's cidr: revert network.cluster.cidr, or destroy and recreate the cluster",
			inv.cidr, sn.Name, sn.ID, sn.CIDR)
	}
	return nil
}

// validateSubnet is the whole-run validation's part of checkCIDR: it runs
// before the first phase mutates anything (I-V3). It reads only the
// cluster's owned subnets; refusing an unowned same-named one is the
// network phase's.
func (c *Cloud) validateSubnet(ctx context.Context, cluster *config.Cluster) error {
	n := namesOf(cluster.Name)
	list, err := c.subnetLookup(n).list(ctx)
	if err != nil {
		return wrap(err, "list subnets named %s", n.subnet)
	}
	for _, sn := range list {
		if c.owner(n.cluster).owns(subnetAttrs(sn)) {
			inv := &netInventory{names: n, cidr: cluster.Network.Cluster.CIDR, subnet: &sn}
			if err := inv.checkCIDR(); err != nil {
				return err
			}
		}
	}
	return nil
}

// readPorts reads every port on the cluster network in one call: the
// router's interface, the desired ports and the orphans.
func (c *Cloud) readPorts(ctx context.Context, inv *netInventory, machines []provider.MachineNet) error {
	if inv.net == nil {
		return nil
	}
	all, err := listAll(ctx, ports.List(c.network, ports.ListOpts{NetworkID: inv.net.ID, ProjectID: c.projectID}), ports.ExtractPorts)
	if err != nil {
		return wrap(err, "list ports of network %s", inv.names.net)
	}
	desired := desiredPorts(inv.names, machines)
	byName := sortPorts(inv, all, desired)
	if err := c.keepServedPorts(ctx, inv); err != nil {
		return err
	}
	for _, w := range desired {
		p, err := pickOwned(ctx, c, inv, c.portLookup(inv.net.ID, w.name, w.tags), byName[w.name])
		if err != nil {
			return err
		}
		if p != nil {
			inv.ports[w.name] = p
		}
	}
	return nil
}

// desiredPorts are the cluster network's ports cluster.yaml wants: the
// two floating IPs' ports and one per machine.
func desiredPorts(n netNames, machines []provider.MachineNet) []portWant {
	desired := []portWant{{name: n.kubeapi, tags: ClusterTags(n.cluster)}, {name: n.ingress, tags: ClusterTags(n.cluster)}}
	for _, m := range machines {
		desired = append(desired, portWant{name: m.Hostname, tags: machineTags(m, n.cluster)})
	}
	return desired
}

// sortPorts sorts the ports of the cluster network: it notes the
// router's interface on the subnet and the owned unbound orphans in inv,
// and returns the desired ports by name.
func sortPorts(inv *netInventory, all []ports.Port, desired []portWant) map[string][]ports.Port {
	isDesired := func(p ports.Port) bool {
		return slices.ContainsFunc(desired, func(w portWant) bool { return w.name == p.Name })
	}
	byName := map[string][]ports.Port{}
	for _, p := range all {
		switch {
		case p.DeviceOwner == ownerRouterInterface:
			inv.iface = inv.iface || (inv.router != nil && p.DeviceID == inv.router.ID && inv.subnet != nil && onSubnet(p, inv.subnet.ID))
		case isDesired(p):
			byName[p.Name] = append(byName[p.Name], p)
		case p.DeviceID == "" && machinePortOwned(p, inv.owner):
			inv.orphans = append(inv.orphans, p)
		}
	}
	return byName
}

// machinePortOwned reports a machine port of o: tagged with a role, or
// carrying the description marker (a run ended before tagging it).
func machinePortOwned(p ports.Port, o owner) bool {
	if o.tagged(portAttrs(p)) {
		return slices.ContainsFunc(p.Tags, func(t string) bool { return strings.HasPrefix(t, RoleTag("")) })
	}
	return o.described(portAttrs(p))
}

// keepServedPorts drops from the orphans every port named after an owned
// server that still exists: a server whose build failed, or whose port was
// detached, leaves its port unbound, and that machine's port is the nodes
// phase's to delete, after its server (Compute.DeleteMachine). The servers
// are listed only when there is an orphan.
func (c *Cloud) keepServedPorts(ctx context.Context, inv *netInventory) error {
	if len(inv.orphans) == 0 {
		return nil
	}
	list, err := c.ownedServers(ctx, inv.names.cluster)
	if err != nil {
		return err
	}
	inv.orphans = slices.DeleteFunc(inv.orphans, func(p ports.Port) bool {
		return slices.ContainsFunc(list, func(s servers.Server) bool { return s.Name == p.Name })
	})
	return nil
}

// readFloatingIPs finds the two floating IPs by description in one call:
// a floating IP has no name, so its description is its name followed by
// the ownership marker (the reference's, without the marker, is accepted
// from runs before the marker).
func (c *Cloud) readFloatingIPs(ctx context.Context, inv *netInventory) error {
	names := []string{inv.names.kubeapi, inv.names.ingress}
	all, err := c.fipsDescribed(ctx, inv.names.cluster, names...)
	if err != nil {
		return wrap(err, "list floating ips described %s", strings.Join(names, " or "))
	}
	for _, name := range names {
		mine := slices.DeleteFunc(slices.Clone(all), func(f floatingips.FloatingIP) bool { return inv.owner.base(f.Description) != name })
		f, err := pickOwned(ctx, c, inv, c.fipLookup(inv.names.cluster, name), mine)
		if err != nil {
			return err
		}
		if f != nil {
			inv.fips[name] = f
		}
	}
	return nil
}

// externalNetwork looks openstack.external_net up by name (read-only).
func (c *Cloud) externalNetwork(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", errors.New("openstack.external_net is not set: name the external network for the router and floating IPs")
	}
	ext := true
	nets, err := listAll(ctx, networks.List(c.network, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{Name: name}, External: &ext}), networks.ExtractNetworks)
	if err != nil {
		return "", wrap(err, "openstack.external_net %q: list external networks", name)
	}
	switch len(nets) {
	case 0:
		return "", fmt.Errorf("openstack.external_net %q: no external network of that name is visible in region %s; check the name (openstack network list --external)", name, c.region)
	case 1:
		return nets[0].ID, nil
	}
	return "", fmt.Errorf("openstack.external_net %q: %d external networks have that name; Neutron names are not unique, ask the cloud's operators which one to use", name, len(nets))
}

// findOwned lists l's candidates and picks the owned one (see pickOwned).
func findOwned[T any](ctx context.Context, c *Cloud, inv *netInventory, l lookup[T]) (*T, error) {
	found, err := l.list(ctx)
	if err != nil {
		return nil, wrap(err, "list %ss named %s", kindWord(l.kind), l.name)
	}
	return pickOwned(ctx, c, inv, l, found)
}

// pickOwned returns the one owned resource among same-named candidates,
// nil when there is none, and refuses an unowned one when none is owned
// (reference I-F1). Of several owned ones (a create of an earlier run
// applied after its client gave up: Neutron names are not unique), the
// one in use is kept and the others are noted in inv.twins for the
// reconcile to delete (provider.DedupeOwned; neutronUses); several in use
// are refused, named. A resource carrying the cluster's description marker
// without its tags is owned: a run ended between creating and tagging it;
// it is noted in inv.untagged, for the reconcile to finish. A resource of
// another project (which the lists filter out; a cloud ignoring the
// filter) is neither adopted nor refused: names are the project's own, and
// no project's run is blocked by another's.
func pickOwned[T any](ctx context.Context, c *Cloud, inv *netInventory, l lookup[T], found []T) (*T, error) {
	var mine []T
	var foreign []string
	for _, x := range found {
		switch a := l.attrs(x); {
		case a.project != inv.owner.project:
		case inv.owner.owns(a):
			mine = append(mine, x)
		default:
			foreign = append(foreign, a.id)
		}
	}
	switch {
	case len(mine) == 0 && len(foreign) > 0:
		return nil, fmt.Errorf("refusing to adopt unowned %s %s (%s): it lacks the ownership tags %s and %s", kindWord(l.kind), l.name, foreign[0], TagManagedBy, ClusterTag(inv.names.cluster))
	case len(mine) == 0:
		return nil, nil
	}
	keep := mine[0]
	if len(mine) > 1 {
		used, err := neutronUses(ctx, c, l.kind, l.attrs, mine)
		var drop []T
		keep, drop, err = judge(c, kindWord(l.kind)+" "+l.name, mine, func(x T) string { return l.attrs(x).id }, used, err)
		if err != nil {
			return nil, err
		}
		for _, x := range drop {
			inv.twins = append(inv.twins, l.twin(x))
		}
	}
	if a := l.attrs(keep); !inv.owner.tagged(a) {
		inv.untagged = append(inv.untagged, untagged{kind: l.kind, collection: l.collection, name: l.name, id: a.id, tags: l.tags})
	}
	return &keep, nil
}

// listAll reads every page of pager.
func listAll[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	page, err := pager.AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return extract(page)
}

func extractNetworks(p pagination.Page) ([]network, error) {
	var out []network
	err := networks.ExtractNetworksInto(p, &out)
	return out, err
}

// kindWord is a change kind in words: "openstack:floating-ip" -> "floating ip".
func kindWord(kind string) string {
	return strings.ReplaceAll(strings.TrimPrefix(kind, "openstack:"), "-", " ")
}

// onSubnet reports whether p has an address on subnet.
func onSubnet(p ports.Port, subnet string) bool {
	return slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return ip.SubnetID == subnet })
}

// portAddr is p's IPv4 address on the cluster subnet (any IPv4 address
// when the subnet is not known yet).
func (inv *netInventory) portAddr(p *ports.Port) netip.Addr {
	for _, ip := range p.FixedIPs {
		a, err := netip.ParseAddr(ip.IPAddress)
		if err == nil && a.Is4() && (inv.subnet == nil || ip.SubnetID == inv.subnet.ID) {
			return a
		}
	}
	return netip.Addr{}
}
