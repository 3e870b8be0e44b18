package config

import (
	"net/netip"
)

// Kubernetes networks every host network must avoid (warnings only).
const (
	PodCIDR     = "10.244.0.0/16"
	ServiceCIDR = "10.96.0.0/12"
	// DefaultMTU is the MTU of network.cluster and network.external when unset.
	DefaultMTU = 1500
	minMTU     = 1280
)

// network checks the network section (§2.3 network).
func (v *validator) network(provider string) {
	if !v.required("network") {
		return
	}
	n := &v.c.Network
	if v.required("network.cluster") {
		v.clusterNetwork()
	}
	if provider == ProviderProxmox {
		v.external()
		v.vipPlacement()
		if (v.has("proxmox.network.cluster.bridge") || v.has("proxmox.network.cluster.vnet")) && len(n.DNS) > 0 {
			v.warnf("network.dns is ignored on a Proxmox bridge/vnet (DHCP-backed) network; the nodes use the resolvers DHCP hands out")
		}
	}
	v.required("network.dns")
	if v.required("network.ntp") {
		v.nonEmpty("network.ntp", n.NTP)
	}
}

func (v *validator) clusterNetwork() {
	cl := &v.c.Network.Cluster
	if v.required("network.cluster.cidr") {
		v.strictNetwork("network.cluster.cidr", cl.CIDR)
	}
	v.insideNet("network.cluster.gateway", cl.Gateway, "network.cluster.cidr", cl.CIDR)
	v.vlan("network.cluster.vlan", cl.VLAN)
	v.mtu("network.cluster.mtu", cl.MTU)
	if v.insideNet("network.cluster.kubeapi_vip", cl.KubeAPIVIP, "network.cluster.cidr", cl.CIDR) {
		v.vipAddress("network.cluster", cl.KubeAPIVIP, cl.CIDR, cl.Gateway)
	}
}

// external checks network.external (Proxmox only; OpenStack refuses it).
func (v *validator) external() {
	ext := v.c.Network.External
	if ext == nil {
		return
	}
	if v.required("network.external.cidr") {
		ext.CIDR = ext.CIDR.Masked() // non-strict, as Python's ip_network(strict=False)
	}
	if v.required("network.external.gateway") {
		v.insideNet("network.external.gateway", ext.Gateway, "network.external.cidr", ext.CIDR)
	}
	v.vlan("network.external.vlan", ext.VLAN)
	v.mtu("network.external.mtu", ext.MTU)
	if v.required("network.external.anchor_cidr") && v.strictNetwork("network.external.anchor_cidr", ext.AnchorCIDR) {
		linkLocal := netip.MustParsePrefix("169.254.0.0/16")
		if !linkLocal.Contains(ext.AnchorCIDR.Addr()) || ext.AnchorCIDR.Bits() < linkLocal.Bits() {
			v.errf("network.external.anchor_cidr", "%s must be inside %s (link-local)", ext.AnchorCIDR, linkLocal)
		}
	}
	v.ingressPool(ext)
	if v.insideNet("network.external.kubeapi_vip", ext.KubeAPIVIP, "network.external.cidr", ext.CIDR) {
		v.vipAddress("network.external", ext.KubeAPIVIP, ext.CIDR, ext.Gateway)
		if ext.IngressPool.Contains(ext.KubeAPIVIP) {
			v.errf("network.external.kubeapi_vip", "%s is inside network.external.ingress_pool %s; MetalLB could hand the API address to a service",
				ext.KubeAPIVIP, ext.IngressPool)
		}
	}
	cl := v.c.Network.Cluster.CIDR
	if cl.IsValid() && ext.CIDR.IsValid() && cl.Overlaps(ext.CIDR) {
		v.errf("network.external.cidr", "%s overlaps network.cluster.cidr %s", ext.CIDR, cl)
	}
}

func (v *validator) ingressPool(ext *ExternalNetwork) {
	r := ext.IngressPool
	if !r.IsValid() || !ext.CIDR.IsValid() {
		return
	}
	if !ext.CIDR.Contains(r.Start) || !ext.CIDR.Contains(r.End) {
		v.errf("network.external.ingress_pool", "%s is not inside network.external.cidr %s", r, ext.CIDR)
		return
	}
	if r.Contains(ext.Gateway) {
		v.errf("network.external.ingress_pool", "%s contains network.external.gateway %s", r, ext.Gateway)
	}
}

// vipPlacement: on Proxmox exactly one of the networks carries the API VIP.
func (v *validator) vipPlacement() {
	inCluster := v.present("network.cluster.kubeapi_vip") || v.movedInto("network.cluster.kubeapi_vip")
	inExternal := v.present("network.external.kubeapi_vip") || v.movedInto("network.external.kubeapi_vip")
	switch {
	case inCluster && inExternal:
		v.problem("network.external.kubeapi_vip", "kubeapi_vip must be set in only one of network.cluster or network.external")
	case !inCluster && !inExternal && v.has("network.cluster"):
		v.problem("network", "kubeapi_vip must be set in network.cluster or network.external")
	}
}

// vipAddress refuses a VIP that is the network, broadcast or gateway address.
func (v *validator) vipAddress(section string, vip netip.Addr, cidr netip.Prefix, gw netip.Addr) {
	path := section + ".kubeapi_vip"
	switch {
	case vip == cidr.Masked().Addr():
		v.errf(path, "%s is the network address of %s", vip, cidr)
	case vip == lastAddr(cidr) && cidr.Bits() < 31:
		v.errf(path, "%s is the broadcast address of %s", vip, cidr)
	case gw.IsValid() && vip == gw:
		v.errf(path, "%s is also %s.gateway", vip, section)
	}
}

// strictNetwork requires an IPv4 network address without host bits.
func (v *validator) strictNetwork(path string, p netip.Prefix) bool {
	if !p.IsValid() {
		return false
	}
	if p.Masked() != p {
		v.errf(path, "%s is not a network address (did you mean %s?)", p, p.Masked())
		return false
	}
	return true
}

// insideNet checks that an optional address is IPv4 and inside cidr; it
// reports whether a (set) address passed.
func (v *validator) insideNet(path string, a netip.Addr, cidrPath string, cidr netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	if !a.Is4() {
		v.errf(path, "%s must be an IPv4 address", a)
		return false
	}
	if cidr.IsValid() && !cidr.Masked().Contains(a) {
		v.errf(path, "%s is outside %s %s", a, cidrPath, cidr)
		return false
	}
	return cidr.IsValid()
}

func (v *validator) vlan(path string, vlan int) {
	if v.has(path) && (vlan < 1 || vlan > 4094) {
		v.errf(path, "must be between 1 and 4094, not %d", vlan)
	}
}

func (v *validator) mtu(path string, mtu int) {
	if v.has(path) && mtu < minMTU {
		v.errf(path, "must be at least %d, not %d", minMTU, mtu)
	}
}

// overlapWarnings warns about host networks overlapping the pod or service
// network (check and converge print them).
func (v *validator) overlapWarnings() {
	type hostNet struct {
		path string
		p    netip.Prefix
	}
	hosts := []hostNet{{"network.cluster.cidr", v.c.Network.Cluster.CIDR}}
	if ext := v.c.Network.External; ext != nil {
		hosts = append(hosts, hostNet{"network.external.cidr", ext.CIDR}, hostNet{"network.external.anchor_cidr", ext.AnchorCIDR})
	}
	for _, h := range hosts {
		for _, k := range []struct{ name, cidr string }{{"pod", PodCIDR}, {"service", ServiceCIDR}} {
			if h.p.IsValid() && h.p.Overlaps(netip.MustParsePrefix(k.cidr)) {
				v.warnf("%s %s overlaps the Kubernetes %s network %s", h.path, h.p, k.name, k.cidr)
			}
		}
	}
}

// lastAddr is the highest address of p (the broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n |= ^uint32(0) >> p.Bits()
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}
