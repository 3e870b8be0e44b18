package machineconfig

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// Names of the Proxmox patches.
const (
	PatchProxmoxNetwork    = "proxmox-network"
	PatchProxmoxReturnPath = "proxmox-return-path"
)

// ProxmoxContribution is the Proxmox part of node n's configuration
// (reference §5.3): install disk /dev/sda, the nocloud installer platform,
// and the network. The cluster NIC is aliased "private" by its MAC and gets
// DHCP (bridge/vnet; jumbo MTU stated, default route clamped when
// network.cluster.gateway is set) or its managed-SDN static address with a
// default route through the anycast gateway and network.dns as resolvers.
// With network.external the second NIC is aliased "external" and carries
// the node's link-local anchor; control planes whose VIP is external, and
// every node when an ingress_pool is set, get the return path: routes in
// table 100, routing rules 1000 (from the VIP) and 1001 (marked
// connections), and the return-path static pod. Control planes carry the
// Layer 2 VIP on the link of the network the VIP is on.
func ProxmoxContribution(in *Input, n Node) (Contribution, error) {
	cfg := in.Cluster
	if cfg.Proxmox == nil {
		return Contribution{}, errors.New("proxmox contribution for a cluster without a proxmox section")
	}
	mac0, err := n.mac(cfg.Name, 0)
	if err != nil {
		return Contribution{}, err
	}
	docs := []any{aliasDoc(LinkPrivate, mac0)}
	private, err := proxmoxPrivateLink(cfg, n)
	if err != nil {
		return Contribution{}, err
	}
	docs = append(docs, private...)
	vip, vipExternal := proxmoxVIP(in)
	if ext := cfg.Network.External; ext != nil {
		extDocs, err := proxmoxExternalLink(cfg, n, vip, vipExternal)
		if err != nil {
			return Contribution{}, err
		}
		docs = append(docs, extDocs...)
	}
	if n.controlPlane() {
		link := LinkPrivate
		if vipExternal {
			link = LinkExternal
		}
		if !vip.IsValid() {
			return Contribution{}, errors.New("proxmox: no API VIP for the control planes (network.cluster.kubeapi_vip or network.external.kubeapi_vip)")
		}
		docs = append(docs, vipDoc(vip, link))
	}
	network, err := patch(PatchProxmoxNetwork, docs...)
	if err != nil {
		return Contribution{}, err
	}
	out := Contribution{InstallDisk: DiskProxmox, Platform: factory.PlatformNoCloud, Patches: []NamedPatch{network}}
	if ext := cfg.Network.External; ext != nil && ext.IngressPool.IsValid() {
		rp, err := returnPathPatch(cfg, n)
		if err != nil {
			return Contribution{}, err
		}
		out.Patches = append(out.Patches, rp)
	}
	return out, nil
}

// proxmoxVIP returns the API VIP (the caller's, else cluster.yaml's) and
// whether it lies on network.external.
func proxmoxVIP(in *Input) (netip.Addr, bool) {
	nw := in.Cluster.Network
	vip := in.VIP
	if !vip.IsValid() {
		vip = nw.Cluster.KubeAPIVIP
		if nw.External != nil && nw.External.KubeAPIVIP.IsValid() {
			vip = nw.External.KubeAPIVIP
		}
	}
	return vip, vip.IsValid() && nw.External != nil && nw.External.CIDR.Contains(vip)
}

// proxmoxPrivateLink configures the cluster link: static with managed SDN
// (or when the caller passes an address), DHCP otherwise.
func proxmoxPrivateLink(cfg *config.Cluster, n Node) ([]any, error) {
	cl := cfg.Network.Cluster
	addr := n.Address
	sdnGateway, sdn := cfg.SDNGateway()
	if !addr.IsValid() && sdn {
		a, ok := cfg.SDNAddress(n.Machine)
		if !ok {
			return nil, fmt.Errorf("proxmox: %s has no address in the managed SDN layout of %s", n.Machine.Hostname, cl.CIDR)
		}
		addr = netip.PrefixFrom(a, cl.CIDR.Bits())
	}
	if !addr.IsValid() {
		docs := []any{dhcpDoc(LinkPrivate)}
		if j := jumboLink(LinkPrivate, cl.MTU, cl.Gateway); j != nil {
			docs = append(docs, *j)
		}
		return docs, nil
	}
	if !cl.CIDR.Contains(addr.Addr()) {
		return nil, fmt.Errorf("proxmox: static address %s of %s is outside network.cluster.cidr %s", addr, n.Machine.Hostname, cl.CIDR)
	}
	gateway := cl.Gateway
	if sdn {
		gateway = sdnGateway
	}
	docs := []any{staticLink(LinkPrivate, addr, cl.MTU, gateway)}
	if r := resolverFor(cfg.Network.DNS); r != nil {
		docs = append(docs, *r)
	}
	return docs, nil
}

// proxmoxExternalLink configures the external NIC: its alias, the anchor,
// and the return path when the node needs one.
func proxmoxExternalLink(cfg *config.Cluster, n Node, vip netip.Addr, vipExternal bool) ([]any, error) {
	ext := cfg.Network.External
	if cfg.Proxmox.Network.External == nil {
		return nil, errors.New("proxmox: network.external is set but proxmox.network.external.bridge is not; the VMs have no external NIC")
	}
	mac1, err := n.mac(cfg.Name, 1)
	if err != nil {
		return nil, err
	}
	anchor, err := anchorFor(cfg, n.Machine.Hostname)
	if err != nil {
		return nil, err
	}
	link := linkDoc{header: kind("LinkConfig"), Name: LinkExternal, Addresses: []linkAddress{{Address: anchor.String()}}}
	if ext.MTU > standardMTU {
		link.MTU = ext.MTU
	}
	vipRule := n.controlPlane() && vipExternal
	ingress := ext.IngressPool.IsValid()
	var rules []any
	if vipRule || ingress {
		def := linkRoute{Gateway: ext.Gateway.String(), Table: returnTable}
		if ext.MTU > standardMTU {
			def.MTU = standardMTU
		}
		link.Routes = []linkRoute{{Destination: ext.CIDR.Masked().String(), Table: returnTable}, def}
	}
	if vipRule {
		rules = append(rules, routingRuleDoc{
			header: kind("RoutingRuleConfig"), Name: fmt.Sprint(rulePriorityVIP),
			Src: netip.PrefixFrom(vip, 32).String(), Table: returnTable,
		})
	}
	if ingress {
		rules = append(rules, routingRuleDoc{
			header: kind("RoutingRuleConfig"), Name: fmt.Sprint(rulePriorityIngress),
			FwMark: ingressMark, FwMask: ingressMark, Table: returnTable,
		})
	}
	return append([]any{aliasDoc(LinkExternal, mac1), link}, rules...), nil
}

// anchorFor returns hostname's anchor and refuses one that collides with
// another desired machine's (the reference aborts on a collision).
func anchorFor(cfg *config.Cluster, hostname string) (netip.Prefix, error) {
	ext := cfg.Network.External
	mine, err := naming.Anchor(cfg.Name, hostname, ext.AnchorCIDR)
	if err != nil {
		return netip.Prefix{}, err
	}
	for _, m := range cfg.Hostnames() {
		if m.Hostname == hostname {
			continue
		}
		other, err := naming.Anchor(cfg.Name, m.Hostname, ext.AnchorCIDR)
		if err != nil {
			return netip.Prefix{}, err
		}
		if other == mine {
			return netip.Prefix{}, fmt.Errorf("link-local anchors of %s and %s collide (%s in network.external.anchor_cidr %s); use a larger anchor_cidr (/20 or wider)",
				hostname, m.Hostname, mine.Addr(), ext.AnchorCIDR)
		}
	}
	return mine, nil
}
