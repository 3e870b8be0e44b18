package machineconfig

import (
	"fmt"
	"net/netip"
)

// Link aliases the generated configs give the NICs (LinkAliasConfig names).
const (
	// LinkPrivate is the cluster NIC (NIC 0).
	LinkPrivate = "private"
	// LinkExternal is the routed external NIC (NIC 1, Proxmox).
	LinkExternal = "external"
	// linkOpenStackFallback is the OpenStack NIC when its MAC is unknown:
	// cloud platforms boot with net.ifnames=0 and a server has one port.
	linkOpenStackFallback = "eth0"
)

// standardMTU is the MTU the default route is clamped to on jumbo-frame
// L2s: traffic leaving the L2 rarely survives more.
const standardMTU = 1500

// dhcpRouteMetric is the metric Talos gives DHCP routes. A static route with
// the same gateway and metric replaces the DHCP one (the configuration layer
// wins), which is how the default route of a DHCP link gets its MTU clamp.
const dhcpRouteMetric = 1024

// returnTable is the routing table of the external return path (Proxmox),
// as Talos documents write it.
const returnTable = "100"

// Routing rule priorities of the external return path (Proxmox).
const (
	rulePriorityVIP     = 1000
	rulePriorityIngress = 1001
)

// ingressMark marks connections that arrived on the external link so their
// replies take the return path (clear of kube-proxy's 0x4000/0x8000 bits).
const ingressMark = 0x2000

// aliasDoc names the link whose permanent MAC is mac.
func aliasDoc(name, mac string) linkAliasDoc {
	return linkAliasDoc{
		header:   kind("LinkAliasConfig"),
		Name:     name,
		Selector: linkSelector{Match: fmt.Sprintf("mac(link.permanent_addr) == %q", mac)},
	}
}

func dhcpDoc(link string) dhcp4Doc { return dhcp4Doc{header: kind("DHCPv4Config"), Name: link} }

func vipDoc(vip netip.Addr, link string) layer2VIPDoc {
	return layer2VIPDoc{header: kind("Layer2VIPConfig"), Name: vip.String(), Link: link}
}

// jumboLink returns the LinkConfig that states a jumbo MTU and clamps the
// default route through gateway to 1500 (nil when mtu is standard). Without
// a known gateway only the link MTU is stated.
func jumboLink(link string, mtu int, gateway netip.Addr) *linkDoc {
	if mtu <= standardMTU {
		return nil
	}
	doc := &linkDoc{header: kind("LinkConfig"), Name: link, MTU: mtu}
	if gateway.IsValid() {
		doc.Routes = []linkRoute{{Gateway: gateway.String(), Metric: dhcpRouteMetric, MTU: standardMTU}}
	}
	return doc
}

// staticLink returns the LinkConfig of a statically addressed link: the
// address, the default route through gateway (clamped to 1500 on jumbo
// L2s) and a jumbo MTU.
func staticLink(link string, addr netip.Prefix, mtu int, gateway netip.Addr) linkDoc {
	doc := linkDoc{header: kind("LinkConfig"), Name: link, Addresses: []linkAddress{{Address: addr.String()}}}
	if mtu > standardMTU {
		doc.MTU = mtu
	}
	if gateway.IsValid() {
		r := linkRoute{Gateway: gateway.String(), Metric: dhcpRouteMetric}
		if mtu > standardMTU {
			r.MTU = standardMTU
		}
		doc.Routes = []linkRoute{r}
	}
	return doc
}

// resolverFor returns the ResolverConfig of a statically configured node
// (nil when there are no resolvers).
func resolverFor(dns []netip.Addr) *resolverDoc {
	if len(dns) == 0 {
		return nil
	}
	doc := &resolverDoc{header: kind("ResolverConfig")}
	for _, a := range dns {
		doc.Nameservers = append(doc.Nameservers, nameserver{Address: a.String()})
	}
	return doc
}

// firstHost is the first host address of p (the usual gateway).
func firstHost(p netip.Prefix) netip.Addr {
	if !p.IsValid() {
		return netip.Addr{}
	}
	return p.Masked().Addr().Next()
}
