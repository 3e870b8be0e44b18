package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
)

// groupSelf marks a rule whose remote group is the cluster group itself.
const groupSelf = "self"

// ruleKey is an ingress rule normalised for comparison (reference §5.2):
// protocol by name, "every port" as 0-0, remote_ip masked with 0.0.0.0/0
// as none, and the remote group as groupSelf only when it is the cluster
// group (a foreign group keeps its id, so it never passes for an open rule).
type ruleKey struct {
	ether       string // "IPv4" or "IPv6"
	proto       string // "tcp", "udp", "icmp", another name or number; "" any
	min, max    int    // 0-0: every port
	remoteIP    string // masked CIDR; "" anywhere
	remoteGroup string // groupSelf, a foreign group id, or ""
}

// desiredRules are the cluster group's ingress rules, in order, without
// duplicates: ICMP; tcp/80 and tcp/443 from anywhere unless a security rule
// claims the port (the Talos firewall's policy); each security rule's port
// from each of its hosts; tcp and udp from the group itself.
func desiredRules(sec config.SecurityRules) []ruleKey {
	v4 := string(rules.EtherType4)
	want := []ruleKey{{ether: v4, proto: string(rules.ProtocolICMP)}}
	for _, p := range sec.OpenPorts() {
		want = append(want, ruleKey{ether: v4, proto: string(rules.ProtocolTCP), min: p, max: p})
	}
	for _, r := range sec {
		for _, h := range r.Hosts {
			k := ruleKey{ether: v4, proto: string(rules.ProtocolTCP), min: r.Port, max: r.Port}
			if h.CIDR.Addr().Is6() {
				k.ether = string(rules.EtherType6)
			}
			if !h.Open() {
				k.remoteIP = h.CIDR.Masked().String()
			}
			want = append(want, k)
		}
	}
	for _, proto := range []rules.RuleProtocol{rules.ProtocolTCP, rules.ProtocolUDP} {
		want = append(want, ruleKey{ether: v4, proto: string(proto), remoteGroup: groupSelf})
	}
	out := want[:0]
	for i, k := range want {
		if !slices.Contains(want[:i], k) {
			out = append(out, k)
		}
	}
	return out
}

// normalRule is the key of an existing rule of the group sg.
func normalRule(r rules.SecGroupRule, sg string) ruleKey {
	k := ruleKey{ether: r.EtherType, proto: protoName(r.Protocol), min: r.PortRangeMin, max: r.PortRangeMax}
	if (k.proto == string(rules.ProtocolTCP) || k.proto == string(rules.ProtocolUDP)) && k.min <= 1 && k.max == 65535 {
		k.min, k.max = 0, 0
	}
	if p, err := netip.ParsePrefix(r.RemoteIPPrefix); err == nil && p.Bits() > 0 {
		k.remoteIP = p.Masked().String()
	} else if a, err := netip.ParseAddr(r.RemoteIPPrefix); err == nil {
		k.remoteIP = netip.PrefixFrom(a, a.BitLen()).String()
	}
	switch r.RemoteGroupID {
	case "":
	case sg:
		k.remoteGroup = groupSelf
	default:
		k.remoteGroup = r.RemoteGroupID
	}
	return k
}

// protoName maps the protocol numbers Neutron also accepts to their names.
func protoName(p string) string {
	switch p {
	case "1":
		return string(rules.ProtocolICMP)
	case "6":
		return string(rules.ProtocolTCP)
	case "17":
		return string(rules.ProtocolUDP)
	}
	return p
}

// describe renders k for a plan: "tcp/6443 from 127.0.0.0/8",
// "udp from group mycluster"; group names the cluster group.
func (k ruleKey) describe(group string) string {
	s := k.proto
	if s == "" {
		s = "any"
	}
	switch {
	case k.min == 0 && k.max == 0:
	case k.min == k.max:
		s += fmt.Sprintf("/%d", k.min)
	default:
		s += fmt.Sprintf("/%d-%d", k.min, k.max)
	}
	if k.ether != string(rules.EtherType4) {
		s = k.ether + " " + s
	}
	switch {
	case k.remoteGroup == groupSelf:
		return s + " from group " + group
	case k.remoteGroup != "":
		return s + " from group " + k.remoteGroup
	case k.remoteIP != "":
		return s + " from " + k.remoteIP
	}
	return s + " from anywhere"
}

// sgDescription is the cluster security group's description, before the
// ownership marker (the reference's).
func sgDescription(cluster string) string { return cluster + " kubernetes cluster security group" }

// securityGroup creates the cluster security group when it is missing.
func (r *netReconciler) securityGroup(ctx context.Context) error {
	if r.inv.sg != nil {
		return nil
	}
	n := r.inv.names
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindSecurityGroup, Name: n.sg}, func(ctx context.Context) error {
		g, err := createOwned(ctx, r.c, r.plan, neutronCreate[groups.SecGroup]{
			lookup: r.c.sgLookup(n),
			create: func(ctx context.Context) (*groups.SecGroup, error) {
				desc := r.inv.owner.description(sgDescription(n.cluster))
				return groups.Create(ctx, r.c.network, groups.CreateOpts{Name: n.sg, Description: desc}).Extract()
			},
		}, n.cluster)
		if err == nil {
			r.inv.sg = g
		}
		return err
	})
}

// rules makes the group's ingress rules the desired ones: every missing
// rule is added before any stale one is deleted, so an edit never closes a
// port in between (reference I-F3). Egress rules are left alone.
func (r *netReconciler) rules(ctx context.Context) error {
	var sgID string
	var existing []rules.SecGroupRule
	if r.inv.sg != nil {
		sgID, existing = r.inv.sg.ID, r.inv.sg.Rules
	}
	want := desiredRules(r.cfg.Security)
	have := map[ruleKey]bool{}
	var stale []rules.SecGroupRule
	for _, rule := range existing {
		if rule.Direction != string(rules.DirIngress) {
			continue
		}
		k := normalRule(rule, sgID)
		if have[k] || !slices.Contains(want, k) {
			stale = append(stale, rule)
			continue
		}
		have[k] = true
	}
	group := r.inv.names.sg
	for _, k := range want {
		if have[k] {
			continue
		}
		if err := r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindRule, Name: k.describe(group)}, func(ctx context.Context) error {
			return r.c.createRule(ctx, r.inv.sg.ID, k)
		}); err != nil {
			return err
		}
	}
	for _, rule := range stale {
		if err := r.c.deleteNeutron(ctx, r.plan, doomed{kind: kindRule, name: normalRule(rule, sgID).describe(group), id: rule.ID, del: r.c.deleteRule}); err != nil {
			return err
		}
	}
	return nil
}

// createRule adds the ingress rule k to the group sg. "Every port" is sent
// as no range, which Neutron stores as null. A rule has no name and no
// tags: a lost answer is settled (see settle) on the group's rules of k's
// content, and so is Neutron's answer that the rule exists (409). Neutron
// refuses a second identical rule, so there is never a duplicate.
func (c *Cloud) createRule(ctx context.Context, sg string, k ruleKey) error {
	opts := rules.CreateOpts{
		Direction: rules.DirIngress, EtherType: rules.RuleEtherType(k.ether), SecGroupID: sg, Protocol: rules.RuleProtocol(k.proto),
		PortRangeMin: k.min, PortRangeMax: k.max, RemoteIPPrefix: k.remoteIP, RemoteGroupID: k.remoteGroup,
	}
	if k.remoteGroup == groupSelf {
		opts.RemoteGroupID = sg
	}
	_, err := settle(ctx, c, lateCreate[rules.SecGroupRule]{
		what: "rule " + k.describe(sg),
		create: func(ctx context.Context) (rules.SecGroupRule, error) {
			r, err := rules.Create(ctx, c.network, opts).Extract()
			if err != nil {
				return rules.SecGroupRule{}, err
			}
			return *r, nil
		},
		exists: isConflict,
		find: func(ctx context.Context) ([]rules.SecGroupRule, error) {
			have, err := listAll(ctx, rules.List(c.network, rules.ListOpts{SecGroupID: sg, Direction: string(rules.DirIngress)}), rules.ExtractRules)
			return slices.DeleteFunc(have, func(r rules.SecGroupRule) bool { return normalRule(r, sg) != k }), err
		},
		id: func(r rules.SecGroupRule) string { return r.ID },
	})
	return err
}

func (c *Cloud) deleteRule(ctx context.Context, id string) error {
	return rules.Delete(ctx, c.network, id).ExtractErr()
}

func (c *Cloud) deleteSecurityGroup(ctx context.Context, id string) error {
	return groups.Delete(ctx, c.network, id).ExtractErr()
}
