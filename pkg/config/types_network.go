package config

import (
	"net/netip"
	"slices"
	"strings"
)

// Network is the network section.
type Network struct {
	// Cluster is the private L2 every node is on.
	Cluster ClusterNetwork `yaml:"cluster" jsonschema_description:"The private network every node is on."`
	// External is the routed external network (Proxmox only).
	External *ExternalNetwork `yaml:"external,omitempty" jsonschema_description:"Routed external network on a second NIC (Proxmox only)."`
	// DNS are the resolvers (may be empty except with managed SDN).
	DNS []netip.Addr `yaml:"dns" jsonschema_description:"Resolvers; [] is allowed except with managed SDN (ignored on a DHCP-backed Proxmox bridge/vnet)."`
	// NTP are the time servers.
	NTP []string `yaml:"ntp" jsonschema_description:"Time servers (machine.time.servers)."`
}

// ClusterNetwork is network.cluster.
type ClusterNetwork struct {
	// CIDR is the network address of the cluster L2.
	CIDR netip.Prefix `yaml:"cidr" jsonschema_description:"IPv4 network address (strict), e.g. 192.168.0.0/21."`
	// Gateway is the router on the cluster L2; invalid when unset.
	Gateway netip.Addr `yaml:"gateway,omitempty" jsonschema_description:"IPv4 router inside cidr (optional)."`
	// VLAN tags the cluster NIC (Proxmox bridge/vnet only); 0 is untagged.
	VLAN int `yaml:"vlan,omitempty" jsonschema:"minimum=1,maximum=4094" jsonschema_description:"VLAN tag 1-4094 (Proxmox bridge/vnet only)."`
	// MTU defaults to 1500.
	MTU int `yaml:"mtu,omitempty" jsonschema:"minimum=1280,default=1500" jsonschema_description:"Link MTU, at least 1280 (default 1500)."`
	// KubeAPIVIP is the Kubernetes API VIP (Proxmox); invalid when unset.
	KubeAPIVIP netip.Addr `yaml:"kubeapi_vip,omitempty" jsonschema_description:"Kubernetes API VIP inside cidr (Proxmox; set it here or in network.external)."`
}

// ExternalNetwork is network.external (Proxmox only).
type ExternalNetwork struct {
	// CIDR is the routed external network (host bits cleared).
	CIDR netip.Prefix `yaml:"cidr" jsonschema_description:"IPv4 network; must not overlap network.cluster.cidr."`
	// Gateway is the external router.
	Gateway netip.Addr `yaml:"gateway" jsonschema_description:"IPv4 router inside cidr."`
	// VLAN tags the external NIC; 0 is untagged.
	VLAN int `yaml:"vlan,omitempty" jsonschema:"minimum=1,maximum=4094" jsonschema_description:"VLAN tag 1-4094."`
	// MTU defaults to 1500.
	MTU int `yaml:"mtu,omitempty" jsonschema:"minimum=1280,default=1500" jsonschema_description:"Link MTU, at least 1280 (default 1500)."`
	// KubeAPIVIP is the Kubernetes API VIP when it rides this network.
	KubeAPIVIP netip.Addr `yaml:"kubeapi_vip,omitempty" jsonschema_description:"Kubernetes API VIP inside cidr and outside ingress_pool."`
	// AnchorCIDR is the link-local range for per-machine anchors.
	AnchorCIDR netip.Prefix `yaml:"anchor_cidr" jsonschema_description:"Link-local network inside 169.254.0.0/16 for per-machine anchors (use /20 or larger)."`
	// IngressPool is the MetalLB address range; zero when unset.
	IngressPool AddrRange `yaml:"ingress_pool,omitempty" jsonschema_description:"MetalLB range start-end inside cidr."`
}

// AddrRange is an inclusive IPv4 range written "start-end".
type AddrRange struct {
	// Start is the first address of the range.
	Start netip.Addr
	// End is the last address of the range (Start <= End).
	End netip.Addr
}

// IsValid reports whether the range is set.
func (r AddrRange) IsValid() bool { return r.Start.IsValid() && r.End.IsValid() }

// Contains reports whether a is inside the range.
func (r AddrRange) Contains(a netip.Addr) bool {
	return r.IsValid() && a.IsValid() && r.Start.Compare(a) <= 0 && a.Compare(r.End) <= 0
}

// String renders the range as written in cluster.yaml.
func (r AddrRange) String() string {
	if !r.IsValid() {
		return ""
	}
	return r.Start.String() + "-" + r.End.String()
}

// Default ports of the security rules that have one.
const (
	PortKubernetes = 6443
	PortTalos      = 50000
	PortHTTP       = 80
	PortHTTPS      = 443
)

// SecurityRules are the named ingress rules of the security section, in file
// order. Decoded from a mapping rule -> short or long form.
type SecurityRules []SecurityRule

// SecurityRule is one named ingress rule with its resolved port.
type SecurityRule struct {
	// Name is the rule's key.
	Name string
	// Port is the explicit port or the name's default.
	Port int
	// Hosts are the allowed sources in file order; empty closes the port.
	Hosts []SecurityHost
}

// SecurityHost is one labelled source network of a rule.
type SecurityHost struct {
	// Label is the host label (free text).
	Label string
	// CIDR is the source network; 0.0.0.0/0 means open to everyone.
	CIDR netip.Prefix
}

// Open reports whether the source is 0.0.0.0/0 (the same as no restriction).
func (h SecurityHost) Open() bool { return h.CIDR.IsValid() && h.CIDR.Bits() == 0 }

// TalosName is the Talos NetworkRuleConfig name of the rule:
// security-<name lowercased, every character outside [a-z0-9-] replaced by '-'>.
func (r SecurityRule) TalosName() string {
	keep := func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			return c
		}
		return '-'
	}
	return "security-" + strings.Map(keep, strings.ToLower(r.Name))
}

// OpenPorts returns the open-by-default ports (80, then 443) that no rule
// claims: the policy the Talos host firewall, the OpenStack security group
// and the Proxmox VM firewall all enforce, so it lives with the rules. A
// claim is keyed on the resolved port, whatever the rule's name, and a
// claiming rule with no hosts closes the port to all.
func (s SecurityRules) OpenPorts() []int {
	var open []int
	for _, p := range []int{PortHTTP, PortHTTPS} {
		if !slices.ContainsFunc(s, func(r SecurityRule) bool { return r.Port == p }) {
			open = append(open, p)
		}
	}
	return open
}

// defaultPort returns the built-in port of a rule name (0 when none).
func defaultPort(name string) int {
	switch name {
	case "kubernetes":
		return PortKubernetes
	case "talos":
		return PortTalos
	case "http":
		return PortHTTP
	case "https":
		return PortHTTPS
	}
	return 0
}
