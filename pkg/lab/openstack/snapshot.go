package openstack

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/talosc/talosc/pkg/lab/inventory"
)

// Snapshot is the whole inventory of the lab's OpenStack, every project's,
// tagged or not: projects, flavors, servers, volumes (attached or not),
// networks, subnets, ports, routers, floating IPs, security groups and
// their rules, images. Each resource is one line free of ids (a reference
// to another resource names it; an address the cloud allocated is left
// out), so the snapshots of two runs compare line by line.
func (s *Cloud) Snapshot() inventory.Snapshot {
	inv := s.Inventory()
	n := newNamer(inv)
	var b inventory.Builder
	for _, p := range inv.Projects {
		b.Add("project", p.Name)
	}
	for _, f := range inv.Flavors {
		b.Add("flavor", f.Name, inventory.A("vcpus", f.VCPUs), inventory.A("ram", f.RAM), inventory.A("disk", f.Disk))
	}
	for _, x := range inv.Servers {
		b.Add("server", x.Name, n.project(x.ProjectID), inventory.A("status", x.Status), inventory.A("flavor", n.flavors[x.FlavorID]),
			inventory.A("image", n.images[x.ImageID]), inventory.A("zone", x.Zone), n.tags(x.Tags),
			inventory.Map("metadata", x.Metadata), inventory.A("ports", n.list(n.ports, x.Ports)), inventory.A("config-drive", x.ConfigDrive))
	}
	for _, x := range inv.Volumes {
		attached := ""
		if x.ServerID != "" {
			attached = n.servers[x.ServerID] + ":" + x.Device
		}
		b.Add("volume", x.Name, n.project(x.ProjectID), inventory.A("status", x.Status), inventory.A("size", x.Size),
			inventory.A("bootable", x.Bootable), inventory.A("image", n.images[x.ImageID]), inventory.A("attached", attached),
			n.description(x.Description), inventory.Map("metadata", x.Metadata))
	}
	for _, x := range inv.Networks {
		b.Add("network", x.Name, n.project(x.ProjectID), n.tags(x.Tags), n.description(x.Description),
			inventory.A("mtu", x.MTU), inventory.A("external", x.External), inventory.A("shared", x.Shared),
			inventory.A("port-security", x.PortSecurity), inventory.A("up", x.AdminStateUp))
	}
	for _, x := range inv.Subnets {
		b.Add("subnet", x.Name, n.project(x.ProjectID), inventory.A("network", n.networks[x.NetworkID]), inventory.A("cidr", x.CIDR),
			inventory.A("gateway", x.GatewayIP), inventory.A("dhcp", x.EnableDHCP), inventory.List("dns", x.DNSNameservers),
			inventory.A("pools", fmt.Sprint(x.Pools)), n.tags(x.Tags), n.description(x.Description))
	}
	for _, x := range inv.Ports {
		n.port(&b, x)
	}
	for _, x := range inv.Routers {
		gw := ""
		if x.Gateway != nil {
			gw = n.networks[x.Gateway.NetworkID] + " snat=" + strconv.FormatBool(x.Gateway.EnableSNAT)
		}
		b.Add("router", x.Name, n.project(x.ProjectID), inventory.A("gateway", gw), inventory.A("up", x.AdminStateUp),
			n.tags(x.Tags), n.description(x.Description))
	}
	for _, x := range inv.FloatingIPs {
		b.Add("floatingip", n.ports[x.PortID], n.project(x.ProjectID), inventory.A("network", n.networks[x.FloatingNetworkID]),
			inventory.A("router", n.routers[x.RouterID]), inventory.A("status", x.Status), n.tags(x.Tags),
			n.description(x.Description))
	}
	for _, x := range inv.SecurityGroups {
		b.Add("security-group", x.Name, n.project(x.ProjectID), inventory.A("stateful", x.Stateful), n.tags(x.Tags),
			n.description(x.Description))
	}
	for _, x := range inv.SecurityGroupRules {
		b.Add("security-group-rule", n.sgs[x.SecurityGroupID], n.project(x.ProjectID), inventory.A("direction", x.Direction),
			inventory.A("ethertype", x.EtherType), inventory.A("protocol", x.Protocol), inventory.A("ports", portRange(x.PortRangeMin, x.PortRangeMax)),
			inventory.A("remote-ip", x.RemoteIPPrefix), inventory.A("remote-group", n.sgs[x.RemoteGroupID]), n.description(x.Description))
	}
	for _, x := range inv.Images {
		b.Add("image", x.Name, inventory.A("owner", n.projects[x.Owner]), inventory.A("status", x.Status), inventory.A("visibility", x.Visibility),
			inventory.A("format", x.DiskFormat+"/"+x.ContainerFormat), inventory.A("protected", x.Protected), n.tags(x.Tags),
			inventory.Map("properties", x.Properties))
	}
	return b.Snapshot()
}

// namer names the resources an inventory references by id.
type namer struct {
	projects, flavors, images, servers, networks, subnets, ports, routers, sgs map[string]string
	// projectIDs names the project ids a tag or a description holds (an
	// ownership marker naming its project).
	projectIDs *strings.Replacer
}

func newNamer(inv Inventory) *namer {
	var idName []string
	for _, p := range inv.Projects {
		idName = append(idName, p.ID, p.Name)
	}
	return &namer{
		projectIDs: strings.NewReplacer(idName...),
		projects:   names(inv.Projects, func(x Project) (string, string) { return x.ID, x.Name }),
		flavors:    names(inv.Flavors, func(x Flavor) (string, string) { return x.ID, x.Name }),
		images:     names(inv.Images, func(x Image) (string, string) { return x.ID, x.Name }),
		servers:    names(inv.Servers, func(x Server) (string, string) { return x.ID, x.Name }),
		networks:   names(inv.Networks, func(x Network) (string, string) { return x.ID, x.Name }),
		subnets:    names(inv.Subnets, func(x Subnet) (string, string) { return x.ID, x.Name }),
		ports:      names(inv.Ports, func(x Port) (string, string) { return x.ID, x.Name }),
		routers:    names(inv.Routers, func(x Router) (string, string) { return x.ID, x.Name }),
		sgs:        names(inv.SecurityGroups, func(x SecurityGroup) (string, string) { return x.ID, x.Name }),
	}
}

// names maps the ids of xs to their names.
func names[T any](xs []T, idName func(T) (id, name string)) map[string]string {
	out := make(map[string]string, len(xs))
	for _, x := range xs {
		id, name := idName(x)
		out[id] = name
	}
	return out
}

func (n *namer) project(id string) inventory.Attr { return inventory.A("project", n.projects[id]) }

// tags are a resource's tags, a project id in them named.
func (n *namer) tags(tags []string) inventory.Attr {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = n.projectIDs.Replace(t)
	}
	return inventory.List("tags", out)
}

// description is a resource's description, a project id in it named.
func (n *namer) description(d string) inventory.Attr {
	return inventory.A("description", n.projectIDs.Replace(d))
}

// list names ids in their order ("-" for an unnamed one).
func (n *namer) list(names map[string]string, ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = cmp.Or(names[id], "-")
	}
	return strings.Join(out, ",")
}

// port adds a port: its addresses by subnet (the address the cloud
// allocated left out), its device by name.
func (n *namer) port(b *inventory.Builder, x Port) {
	var subnets, pairs, sgs []string
	for _, ip := range x.FixedIPs {
		subnets = append(subnets, n.subnets[ip.SubnetID])
	}
	for _, p := range x.AllowedAddressPairs {
		pairs = append(pairs, p.IPAddress)
	}
	for _, id := range x.SecurityGroups {
		sgs = append(sgs, n.sgs[id])
	}
	device := n.servers[x.DeviceID] + n.routers[x.DeviceID]
	if x.DeviceOwner != "" {
		device += "(" + x.DeviceOwner + ")"
	}
	b.Add("port", x.Name, n.project(x.ProjectID), inventory.A("network", n.networks[x.NetworkID]), inventory.List("subnets", subnets),
		inventory.List("address-pairs", pairs), inventory.List("security-groups", sgs), inventory.A("device", device),
		inventory.A("status", x.Status), inventory.A("port-security", x.PortSecurity), inventory.A("up", x.AdminStateUp),
		n.tags(x.Tags), n.description(x.Description))
}

func portRange(lo, hi *int) string {
	switch {
	case lo == nil && hi == nil:
		return ""
	case lo == nil || hi == nil || *lo == *hi:
		if lo == nil {
			lo = hi
		}
		return strconv.Itoa(*lo)
	}
	return fmt.Sprintf("%d-%d", *lo, *hi)
}
