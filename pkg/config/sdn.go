package config

import (
	"crypto/sha256"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
)

// Managed-SDN defaults and limits (§2.3 proxmox.network.cluster.sdn).
const (
	SDNZoneEVPN          = "evpn"
	DefaultSDNController = "evpnctl"
	DefaultSDNASN        = 65000
	maxASN               = 4294967295
	maxVXLANID           = 16777215
	sdnNamePattern       = `^[a-zA-Z][a-zA-Z0-9]{1,7}$`
)

// Managed-SDN static layout inside network.cluster.cidr: the anycast
// gateway is the first host (.1); control plane N sits at offset 10+N
// (10-59 reserved); worker pool i (file order) owns the block 60+50*i ..
// 60+50*i+49 and machine k of it sits at 60+50*i+k.
const (
	sdnGatewayOffset = 1
	sdnCPBase        = 10
	sdnWorkerBase    = 60
	sdnBlock         = 50
	sdnMaxPerPool    = 49
)

// DefaultVRFTag is the sdn.vrf_tag of a cluster that does not set one:
// 10000 + 2*(N mod 8000000), where N is the SHA-256 digest of the cluster
// name read as one big-endian unsigned integer (the reference's
// int(sha256(name).hexdigest(), 16)). The result is even and lies in
// 10000..16009998, so the default tag (vrf_tag+1) is always valid.
func DefaultVRFTag(cluster string) int {
	sum := sha256.Sum256([]byte(cluster))
	n := new(big.Int).SetBytes(sum[:])
	n.Mod(n, big.NewInt(8_000_000))
	return 10000 + 2*int(n.Int64())
}

// sdnDefaults fills unset SDN keys (before validation, so checks see the
// effective values).
func (v *validator) sdnDefaults(s *SDN) {
	const p = "proxmox.network.cluster.sdn."
	if !v.present(p + "name") {
		s.Name = v.c.Name
	}
	if !v.present(p + "zone") {
		s.Zone = SDNZoneEVPN
	}
	if !v.present(p + "controller") {
		s.Controller = DefaultSDNController
	}
	if !v.present(p + "asn") {
		s.ASN = DefaultSDNASN
	}
	if !v.present(p + "vrf_tag") {
		s.VRFTag = DefaultVRFTag(v.c.Name)
	}
	if !v.present(p + "tag") {
		s.Tag = s.VRFTag + 1
	}
	if !v.present(p + "exit_nodes") {
		s.ExitNodes = s.Nodes
		if len(s.ExitNodes) == 0 {
			s.ExitNodes = v.c.Proxmox.Nodes
		}
		s.ExitNodes = slices.Clone(s.ExitNodes)
	}
	if !v.present(p+"primary_exit_node") && len(s.ExitNodes) > 0 {
		s.PrimaryExitNode = s.ExitNodes[0]
	}
}

// sdn checks a managed EVPN zone and what it implies for the cluster.
func (v *validator) sdn() {
	px := v.c.Proxmox
	if px == nil || px.Network.Cluster.SDN == nil {
		return
	}
	s := px.Network.Cluster.SDN
	v.sdnIDs(s)
	v.sdnNodes(s, px.Nodes)
	const p = "proxmox.network.cluster.sdn."
	if v.has(p+"mtu") && (s.MTU <= 0 || s.MTU < v.c.Network.Cluster.MTU) {
		v.errf(p+"mtu", "%d must be greater than 0 and at least network.cluster.mtu (%d)", s.MTU, v.c.Network.Cluster.MTU)
	}
	if v.has("network.cluster.vlan") {
		v.errf("network.cluster.vlan", "cannot be used with proxmox.network.cluster.sdn (the EVPN VNet carries the traffic untagged)")
	}
	if v.has("network.dns") && len(v.c.Network.DNS) == 0 {
		v.errf("network.dns", "must list at least one resolver with managed SDN (proxmox.network.cluster.sdn has no DHCP)")
	}
	v.sdnLayout()
}

// sdnIDs checks the managed SDN's name, zone type, controller, ASN and
// VXLAN ids.
func (v *validator) sdnIDs(s *SDN) {
	const p = "proxmox.network.cluster.sdn."
	v.sdnName(s)
	if v.has(p+"zone") && s.Zone != SDNZoneEVPN {
		v.errf(p+"zone", "is %q; talosc only supports 'evpn'", s.Zone)
	}
	if v.has(p+"controller") && s.Controller == "" {
		v.errf(p+"controller", "must not be empty")
	}
	if v.has(p+"asn") && (s.ASN < 0 || s.ASN > maxASN) {
		v.errf(p+"asn", "must be between 0 and %d, not %d", maxASN, s.ASN)
	}
	if v.has(p+"vrf_tag") && (s.VRFTag < 1 || s.VRFTag > maxVXLANID) {
		v.errf(p+"vrf_tag", "must be between 1 and %d, not %d", maxVXLANID, s.VRFTag)
	}
	v.sdnTag(s)
}

// sdnName checks the SDN id, set or defaulted from the cluster name.
func (v *validator) sdnName(s *SDN) {
	const p = "proxmox.network.cluster.sdn."
	re := regexp.MustCompile(sdnNamePattern)
	switch {
	case v.has(p+"name") && !re.MatchString(s.Name):
		v.errf(p+"name", "%q is not a valid SDN id (2-8 letters or digits, starting with a letter, no hyphens)", s.Name)
	case !v.present(p+"name") && isDNSLabel(s.Name) && !re.MatchString(s.Name):
		v.errf(p+"name", "is unset and the cluster name %q is not a valid SDN id (2-8 letters or digits, starting with a letter, no hyphens); set %sname", s.Name, p)
	}
}

// sdnTag checks the VNet's VXLAN id, set or defaulted to vrf_tag+1.
func (v *validator) sdnTag(s *SDN) {
	const p = "proxmox.network.cluster.sdn."
	switch {
	case v.failed(p + "tag"):
	case !v.present(p+"tag") && s.Tag > maxVXLANID:
		v.errf(p+"tag", "defaults to vrf_tag+1 = %d, which is above %d; set an explicit tag", s.Tag, maxVXLANID)
	case v.has(p+"tag") && (s.Tag < 1 || s.Tag > maxVXLANID):
		v.errf(p+"tag", "must be between 1 and %d, not %d", maxVXLANID, s.Tag)
	case s.Tag == s.VRFTag:
		v.errf(p+"tag", "must differ from vrf_tag (%d)", s.VRFTag)
	}
}

func (v *validator) sdnNodes(s *SDN, pxNodes []string) {
	const p = "proxmox.network.cluster.sdn."
	if v.has(p + "nodes") {
		v.nonEmpty(p+"nodes", s.Nodes)
		v.unique(p+"nodes", s.Nodes)
	}
	if v.has(p + "exit_nodes") {
		v.nonEmpty(p+"exit_nodes", s.ExitNodes)
		v.unique(p+"exit_nodes", s.ExitNodes)
	}
	if v.has(p+"nodes") && v.has(p+"exit_nodes") {
		if out := missingFrom(s.ExitNodes, s.Nodes); len(out) > 0 {
			v.errf(p+"exit_nodes", "must be members of %snodes (%s is not)", p, quoteList(out))
		}
	}
	if v.has(p+"nodes") && len(pxNodes) > 0 {
		if out := missingFrom(pxNodes, s.Nodes); len(out) > 0 {
			v.errf(p+"nodes", "must include every proxmox.nodes entry (missing %s)", quoteList(out))
		}
	}
	if v.has(p+"primary_exit_node") && len(s.ExitNodes) > 0 && !slices.Contains(s.ExitNodes, s.PrimaryExitNode) {
		v.errf(p+"primary_exit_node", "%q must be one of the exit nodes (%s)", s.PrimaryExitNode, quoteList(s.ExitNodes))
	}
}

// missingFrom returns the entries of want that are not in have.
func missingFrom(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// sdnLayout checks pool sizes against the static layout and keeps the API
// VIP off the gateway, node addresses and reserved blocks.
func (v *validator) sdnLayout() {
	cidr := v.c.Network.Cluster.CIDR
	if !cidr.IsValid() {
		return
	}
	check := func(p Pool, path string, offset func(int) int) {
		if p.Count > sdnMaxPerPool {
			v.errf(path+".count", "is %d; managed SDN allows at most %d machines per pool", p.Count, sdnMaxPerPool)
			return
		}
		if p.Count > 0 {
			if _, ok := offsetAddr(cidr, offset(p.Count)); !ok {
				v.errf(path+".count", "is %d, but the SDN static address of %s does not fit network.cluster.cidr %s",
					p.Count, Hostname(v.c.Name, p.Name, p.Count), cidr)
			}
		}
	}
	check(v.c.ControlPlane, "controlplane", func(k int) int { return sdnCPBase + k })
	for i, p := range v.c.Workers {
		check(p, "workers."+p.Name, func(k int) int { return sdnWorkerBase + sdnBlock*i + k })
	}
	vip := v.c.Network.Cluster.KubeAPIVIP
	if !vip.IsValid() || !cidr.Contains(vip) {
		return
	}
	v.sdnVIP(vip, cidr)
}

func (v *validator) sdnVIP(vip netip.Addr, cidr netip.Prefix) {
	const path = "network.cluster.kubeapi_vip"
	o := uint64(addrOffset(cidr, vip))
	if o == sdnGatewayOffset {
		v.errf(path, "%s collides with the SDN anycast gateway", vip)
		return
	}
	for _, m := range v.c.Hostnames() {
		if a, ok := v.c.SDNAddress(m); ok && a == vip {
			v.errf(path, "%s collides with the static address of %s", vip, m.Hostname)
			return
		}
	}
	end := uint64(sdnWorkerBase + sdnBlock*len(v.c.Workers))
	if o >= sdnCPBase && o < end {
		v.errf(path, "%s is inside the SDN reserved layout (offsets %d-%d of %s hold control-plane and worker addresses); pick an address between .2 and .9 or past offset %d",
			vip, sdnCPBase, end-1, cidr, end-1)
	}
}

// SDNGateway returns the managed-SDN anycast gateway, the first host of
// network.cluster.cidr (ok is false without managed SDN).
func (c *Cluster) SDNGateway() (netip.Addr, bool) {
	if c.Proxmox == nil || c.Proxmox.Network.Cluster.SDN == nil {
		return netip.Addr{}, false
	}
	return offsetAddr(c.Network.Cluster.CIDR, sdnGatewayOffset)
}

// SDNAddress returns the static address managed SDN gives m (ok is false
// without managed SDN or for a machine outside the layout).
func (c *Cluster) SDNAddress(m Machine) (netip.Addr, bool) {
	if c.Proxmox == nil || c.Proxmox.Network.Cluster.SDN == nil || m.Index < 1 || m.Index > sdnMaxPerPool {
		return netip.Addr{}, false
	}
	if m.Role == RoleControlPlane {
		return offsetAddr(c.Network.Cluster.CIDR, sdnCPBase+m.Index)
	}
	for i, p := range c.Workers {
		if m.Role == RoleWorker && p.Name == m.Pool {
			return offsetAddr(c.Network.Cluster.CIDR, sdnWorkerBase+sdnBlock*i+m.Index)
		}
	}
	return netip.Addr{}, false
}

// offsetAddr is the address offset hosts into cidr; ok is false when it is
// the broadcast address or beyond.
func offsetAddr(cidr netip.Prefix, offset int) (netip.Addr, bool) {
	if !cidr.IsValid() || !cidr.Addr().Is4() || offset < 0 {
		return netip.Addr{}, false
	}
	size := uint64(1) << (32 - cidr.Bits())
	if uint64(offset) >= size-1 {
		return netip.Addr{}, false
	}
	base := cidr.Masked().Addr().As4()
	n := uint64(base[0])<<24 | uint64(base[1])<<16 | uint64(base[2])<<8 | uint64(base[3])
	n += uint64(offset)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// addrOffset is the distance of a from the network address of cidr.
func addrOffset(cidr netip.Prefix, a netip.Addr) uint32 {
	b, x := cidr.Masked().Addr().As4(), a.As4()
	return (uint32(x[0])<<24 | uint32(x[1])<<16 | uint32(x[2])<<8 | uint32(x[3])) -
		(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}
