// Package firewall renders the Talos host firewall and the tailscale
// extension service configuration of a node as Talos machine-config
// documents (reference §5.4, the ports table of the planning guide).
//
// The firewall is the same on control planes and workers, as in the
// reference tool: the ports table says who may connect to a port, never on
// which role, and a port nothing listens on (6443 on a worker) is closed by
// the absence of a listener. Every node gets, in this order:
//
//	NetworkDefaultActionConfig  ingress: block
//	cluster-tcp, cluster-udp    1-65535 from every cluster L2
//	dhcp-client                 udp/68 from anyone
//	tailscale                   udp/41641 from anyone (tailscale section present)
//	kubespan                    udp/51820 from the L2s the node is not on (KubeSpan on, several L2s)
//	open-tcp-80, open-tcp-443   from anyone, unless a security rule claims the port
//	security-<name>             tcp/<port> from the rule's hosts (rules without hosts: nothing, closed)
//
// tcp/6443 (kubernetes) and tcp/50000 (talos) are ordinary security rules
// with default ports: open to a rule's hosts and to the cluster L2s, closed
// to everyone else when the rule is missing or has no hosts.
package firewall

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/types/network"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"

	"github.com/talosc/talosc/pkg/config"
)

// Ports the generated firewall opens on its own.
const (
	// PortDHCPClient is where DHCP replies arrive (udp).
	PortDHCPClient = 68
	// PortTailscale is tailscale's direct-connection port (udp).
	PortTailscale = 41641
	// PortKubeSpan is KubeSpan's WireGuard port (udp).
	PortKubeSpan = 51820
)

// Names of the documents the firewall always or conditionally contains.
const (
	RuleClusterTCP = "cluster-tcp"
	RuleClusterUDP = "cluster-udp"
	RuleDHCPClient = "dhcp-client"
	RuleTailscale  = "tailscale"
	RuleKubeSpan   = "kubespan"
)

// Input is what a node's firewall is rendered from.
type Input struct {
	// Security holds the cluster's security rules in file order, with
	// resolved ports (as config.Load leaves them).
	Security config.SecurityRules
	// ClusterCIDRs are every L2 the cluster's nodes sit on: the cluster
	// network first, then each metal group's own. Duplicates are dropped.
	ClusterCIDRs []netip.Prefix
	// NodeCIDR is the L2 this node sits on. The zero value means
	// ClusterCIDRs[0]; a metal server off the cluster network passes its
	// own L2 (added to the intra-cluster rules when missing).
	NodeCIDR netip.Prefix
	// Tailscale reports that a tailscale section is present (with or
	// without an auth key): it opens udp/41641.
	Tailscale bool
	// Kubespan reports talos.kubespan: with several L2s it opens
	// udp/51820 from the L2s the node is not on.
	Kubespan bool
	// ControlPlane is the node's role. It does not change the rules: the
	// reference renders one firewall for every node (see the package doc).
	ControlPlane bool
}

// anywhere is 0.0.0.0/0, the source of the open-to-all rules.
func anywhere() netip.Prefix { return netip.PrefixFrom(netip.IPv4Unspecified(), 0) }

// Documents returns the node's firewall as Talos machine-config documents,
// one YAML document per string (no "---" separators), in a stable order.
func Documents(in Input) ([]string, error) {
	subnets, peers, err := in.l2s()
	if err != nil {
		return nil, err
	}
	security, err := securityRules(in.Security)
	if err != nil {
		return nil, err
	}
	docs := []any{defaultAction()}
	docs = append(docs,
		rule(RuleClusterTCP, nethelpers.ProtocolTCP, allPorts(), subnets),
		rule(RuleClusterUDP, nethelpers.ProtocolUDP, allPorts(), subnets),
		rule(RuleDHCPClient, nethelpers.ProtocolUDP, port(PortDHCPClient), []netip.Prefix{anywhere()}),
	)
	if in.Tailscale {
		docs = append(docs, rule(RuleTailscale, nethelpers.ProtocolUDP, port(PortTailscale), []netip.Prefix{anywhere()}))
	}
	// Several L2s require talos.kubespan (config validation); the flag is
	// still checked so a firewall never opens WireGuard with KubeSpan off.
	if in.Kubespan && len(peers) > 0 {
		docs = append(docs, rule(RuleKubeSpan, nethelpers.ProtocolUDP, port(PortKubeSpan), peers))
	}
	for _, p := range in.Security.OpenPorts() {
		docs = append(docs, rule(OpenRuleName(p), nethelpers.ProtocolTCP, port(p), []netip.Prefix{anywhere()}))
	}
	docs = append(docs, security...)
	return encodeAll(docs)
}

// OpenRuleName is the document name of an open-by-default port.
func OpenRuleName(port int) string { return fmt.Sprintf("open-tcp-%d", port) }

// l2s returns the intra-cluster subnets (deduplicated, file order, the
// node's own L2 appended when missing) and the peers: those minus the
// node's own L2.
func (in Input) l2s() (subnets, peers []netip.Prefix, err error) {
	if len(in.ClusterCIDRs) == 0 {
		return nil, nil, errors.New("no cluster CIDR given (network.cluster.cidr is required)")
	}
	all := in.ClusterCIDRs
	own := in.ClusterCIDRs[0]
	if in.NodeCIDR.IsValid() {
		own = in.NodeCIDR
		all = append(slices.Clip(all), in.NodeCIDR)
	}
	seen := map[netip.Prefix]bool{}
	for _, p := range all {
		if err := checkPrefix(p); err != nil {
			return nil, nil, fmt.Errorf("cluster CIDR %w", err)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		subnets = append(subnets, p)
		if p != own {
			peers = append(peers, p)
		}
	}
	return subnets, peers, nil
}

// securityRules renders security-<name> for every rule with hosts and
// refuses two rules that would share a Talos document name: talosctl merges
// NetworkRuleConfig documents by name, which would drop one rule's port.
func securityRules(rules config.SecurityRules) ([]any, error) {
	var docs []any
	byName := map[string]string{}
	for _, r := range rules {
		if r.Port < 1 || r.Port > 65535 {
			return nil, fmt.Errorf("security.%s: port %d is not a resolved port 1-65535 (load cluster.yaml through config.Load)", r.Name, r.Port)
		}
		name := r.TalosName()
		if other, dup := byName[name]; dup {
			return nil, fmt.Errorf("security.%s and security.%s both become the Talos firewall rule %s; rename one", other, r.Name, name)
		}
		byName[name] = r.Name
		if len(r.Hosts) == 0 {
			continue // no hosts: the port stays closed, block does that
		}
		var subnets []netip.Prefix
		seen := map[netip.Prefix]bool{}
		for _, h := range r.Hosts {
			if err := checkPrefix(h.CIDR); err != nil {
				return nil, fmt.Errorf("security.%s.%s: %w", r.Name, h.Label, err)
			}
			if !seen[h.CIDR] {
				seen[h.CIDR] = true
				subnets = append(subnets, h.CIDR)
			}
		}
		docs = append(docs, rule(name, nethelpers.ProtocolTCP, port(r.Port), subnets))
	}
	return docs, nil
}

// checkPrefix accepts a valid network address (host bits clear).
func checkPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return fmt.Errorf("%q is not a valid CIDR", p)
	case p.Masked() != p:
		return fmt.Errorf("%s is not a network address (did you mean %s?)", p, p.Masked())
	}
	return nil
}

func defaultAction() *network.DefaultActionConfigV1Alpha1 {
	d := network.NewDefaultActionConfigV1Alpha1()
	d.Ingress = nethelpers.DefaultActionBlock
	return d
}

func rule(name string, proto nethelpers.Protocol, ports network.PortRanges, subnets []netip.Prefix) *network.RuleConfigV1Alpha1 {
	r := network.NewRuleConfigV1Alpha1()
	r.MetaName = name
	r.PortSelector.Protocol = proto
	r.PortSelector.Ports = ports
	for _, s := range subnets {
		r.Ingress = append(r.Ingress, network.IngressRule{Subnet: s})
	}
	return r
}

func allPorts() network.PortRanges { return network.PortRanges{{Lo: 1, Hi: 65535}} }

func port(p int) network.PortRanges { return network.PortRanges{{Lo: uint16(p), Hi: uint16(p)}} }

// encodeAll renders each document as YAML without comments.
func encodeAll(docs []any) ([]string, error) {
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		b, err := encode(d)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func encode(doc any) (string, error) {
	b, err := encoder.NewEncoder(doc, encoder.WithComments(encoder.CommentsDisabled)).Encode()
	if err != nil {
		return "", fmt.Errorf("encode %T: %w", doc, err)
	}
	return string(b), nil
}
