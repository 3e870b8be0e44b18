package proxmox

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// KindFirewall is the plan kind of a VM's firewall (options and rules).
const KindFirewall = "proxmox:firewall"

// CommentPrefix starts the comment of every firewall rule talosc creates.
const CommentPrefix = "taloscluster: "

// firewallOptions are the VM firewall options talosc keeps.
var firewallOptions = []struct {
	key   string
	value any
}{{"enable", 1}, {"policy_in", "DROP"}, {"policy_out", "ACCEPT"}, {"dhcp", 1}}

// ruleKey identifies a rule: protocol, destination port ("" for all) and
// source ("" for anywhere).
type ruleKey struct {
	proto, dport, source string
}

func (k ruleKey) String() string {
	s := k.proto
	if k.dport != "" {
		s += "/" + k.dport
	}
	return s + " from " + cmp.Or(k.source, "anywhere")
}

// desiredRule is one rule of the per-VM policy.
type desiredRule struct {
	key     ruleKey
	comment string
}

// fwRule is a VM firewall rule as Proxmox lists it.
type fwRule struct {
	Pos     int    `json:"pos"`
	Type    string `json:"type"`
	Action  string `json:"action"`
	Macro   string `json:"macro"`
	Enable  int    `json:"enable"`
	Iface   string `json:"iface"`
	Source  string `json:"source"`
	Dest    string `json:"dest"`
	Proto   string `json:"proto"`
	Dport   string `json:"dport"`
	Sport   string `json:"sport"`
	Comment string `json:"comment"`
	// Digest is that of the whole rule list the rule was read with.
	Digest string `json:"digest"`
}

func (r fwRule) key() ruleKey {
	return ruleKey{proto: strings.ToLower(r.Proto), dport: r.Dport, source: normSource(r.Source)}
}

// plain reports an enabled inbound ACCEPT rule with nothing but protocol,
// port and source: the only shape talosc writes.
func (r fwRule) plain() bool {
	return r.Type == "in" && r.Action == "ACCEPT" && r.Macro == "" && r.Iface == "" && r.Dest == "" && r.Sport == ""
}

// normSource is a rule source in canonical form: "" for anywhere, a
// masked prefix (an address as /32) otherwise; anything else (aliases,
// IP sets) as written.
func normSource(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		if p.Bits() == 0 {
			return ""
		}
		return p.Masked().String()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	return s
}

// firewallPolicy is the desired per-VM policy of a cluster and the ports
// it governs (I-F4).
type firewallPolicy struct {
	rules    []desiredRule
	governed []string
	cluster  string
}

// policyOf is the per-VM firewall (reference §5.3): ICMP; tcp/80 and
// tcp/443 open unless a security rule claims the port; each security
// rule's port from each of its hosts; tcp and udp from the cluster network.
func policyOf(cluster *config.Cluster) firewallPolicy {
	cidr := normSource(cluster.Network.Cluster.CIDR.String())
	p := firewallPolicy{cluster: cidr, governed: []string{strconv.Itoa(config.PortHTTP), strconv.Itoa(config.PortHTTPS)}}
	add := func(k ruleKey, desc string) {
		if !slices.ContainsFunc(p.rules, func(d desiredRule) bool { return d.key == k }) {
			p.rules = append(p.rules, desiredRule{key: k, comment: CommentPrefix + desc})
		}
	}
	add(ruleKey{proto: "icmp"}, "icmp")
	for _, port := range cluster.Security.OpenPorts() {
		add(ruleKey{proto: "tcp", dport: strconv.Itoa(port)}, fmt.Sprintf("tcp/%d open", port))
	}
	for _, r := range cluster.Security {
		port := strconv.Itoa(r.Port)
		if !slices.Contains(p.governed, port) {
			p.governed = append(p.governed, port)
		}
		for _, h := range r.Hosts {
			add(ruleKey{proto: "tcp", dport: port, source: normSource(h.CIDR.String())}, r.Name+" from "+h.Label)
		}
	}
	add(ruleKey{proto: "tcp", source: cidr}, "cluster tcp")
	add(ruleKey{proto: "udp", source: cidr}, "cluster udp")
	return p
}

// owns reports a rule talosc manages: our comment, or a rule whose shape
// lies inside the governed policy (ICMP, intra-cluster tcp/udp, tcp on a
// governed port).
func (p firewallPolicy) owns(r fwRule) bool {
	if strings.HasPrefix(r.Comment, CommentPrefix) {
		return true
	}
	if !r.plain() {
		return false
	}
	k := r.key()
	switch {
	case k.proto == "icmp":
		return k.dport == ""
	case (k.proto == "tcp" || k.proto == "udp") && k.dport == "" && k.source == p.cluster:
		return true
	}
	return k.proto == "tcp" && slices.Contains(p.governed, k.dport)
}

// firewallDiff is what a VM's firewall lacks and holds too much of.
type firewallDiff struct {
	options map[string]any
	missing []desiredRule
	// stale are owned rules not wanted: outside the policy, disabled, or
	// duplicates; foreign rules are reported and kept.
	stale, foreign []fwRule
}

func (d firewallDiff) empty() bool {
	return len(d.options) == 0 && len(d.missing) == 0 && len(d.stale) == 0
}

func (p firewallPolicy) diff(options map[string]any, rules []fwRule) firewallDiff {
	d := firewallDiff{options: map[string]any{}}
	for _, o := range firewallOptions {
		if v, ok := options[o.key]; !ok || fmt.Sprint(v) != fmt.Sprint(o.value) {
			d.options[o.key] = o.value
		}
	}
	kept := map[ruleKey]bool{}
	for _, r := range rules {
		k := r.key()
		switch {
		case !p.owns(r):
			d.foreign = append(d.foreign, r)
		case r.plain() && r.Enable == 1 && !kept[k] && slices.ContainsFunc(p.rules, func(x desiredRule) bool { return x.key == k }):
			kept[k] = true
		default:
			d.stale = append(d.stale, r)
		}
	}
	for _, x := range p.rules {
		if !kept[x.key] {
			d.missing = append(d.missing, x)
		}
	}
	return d
}

// vmTarget is one VM whose firewall is kept.
type vmTarget struct {
	host string
	node string
	vmid int
}

// reconcileFirewall brings a VM's firewall to the policy through plan
// with one summary change. created marks a VM this run creates; one not
// made (a dry run's, which has no VMID) has no firewall to read, and its
// whole firewall is planned. Missing rules are added before stale ones
// are deleted (I-F3); rules talosc does not own are reported and kept
// (I-F4).
func (c *Cloud) reconcileFirewall(ctx context.Context, cluster *config.Cluster, vm vmTarget, created bool, plan *provider.Plan) error {
	p := policyOf(cluster)
	var d firewallDiff
	if vm.vmid == 0 {
		d = p.diff(nil, nil)
	} else {
		options, rules, err := c.readFirewall(ctx, vm)
		if err != nil {
			return err
		}
		d = p.diff(options, rules)
	}
	for _, r := range d.foreign {
		c.opts.Logf("proxmox: VM %s firewall rule %d (%s %s %s %q) is not talosc's: kept", vm.host, r.Pos, r.Type, r.Action, r.key(), r.Comment)
	}
	if d.empty() {
		return nil
	}
	detail := fmt.Sprintf("%d rules added, %d deleted", len(d.missing), len(d.stale))
	if len(d.options) > 0 {
		detail = "policy, " + detail
	}
	action := state.ActionUpdate
	if created {
		action = state.ActionCreate
	}
	change := state.Change{Action: action, Kind: KindFirewall, Name: vm.host, Detail: detail}
	return plan.Do(ctx, change, func(ctx context.Context) error { return c.applyFirewall(ctx, p, vm, d) })
}

// readFirewall reads a VM's firewall options and rules. go-proxmox
// v0.9.0's FirewallOptionGet decodes into a nil pointer, so the options
// are read raw.
func (c *Cloud) readFirewall(ctx context.Context, vm vmTarget) (map[string]any, []fwRule, error) {
	base := vmPath(vm.node, vm.vmid) + "/firewall"
	var options map[string]any
	if err := c.client.Get(ctx, base+"/options", &options); err != nil {
		return nil, nil, fmt.Errorf("read the firewall options of VM %s (%d): %w", vm.host, vm.vmid, err)
	}
	rules, err := c.readRules(ctx, vm)
	return options, rules, err
}

func (c *Cloud) readRules(ctx context.Context, vm vmTarget) ([]fwRule, error) {
	var rules []fwRule
	if err := c.client.Get(ctx, vmPath(vm.node, vm.vmid)+"/firewall/rules", &rules); err != nil {
		return nil, fmt.Errorf("read the firewall rules of VM %s (%d): %w", vm.host, vm.vmid, err)
	}
	slices.SortFunc(rules, func(a, b fwRule) int { return a.Pos - b.Pos })
	return rules, nil
}

// applyFirewall writes the options that differ and adds the missing rules
// (last first: Proxmox inserts at the top, so they end in policy order);
// a rule whose answer was lost is looked for by its shape and comment
// before it is sent again. Then it reads the rules back and deletes the
// stale ones (deleteStale).
func (c *Cloud) applyFirewall(ctx context.Context, p firewallPolicy, vm vmTarget, d firewallDiff) error {
	base := vmPath(vm.node, vm.vmid) + "/firewall"
	if len(d.options) > 0 {
		if err := c.client.Put(ctx, base+"/options", d.options, nil); err != nil {
			return fmt.Errorf("set the firewall options: %w", err)
		}
	}
	for _, x := range slices.Backward(d.missing) {
		body := map[string]any{"type": "in", "action": "ACCEPT", "enable": 1, "proto": x.key.proto, "comment": x.comment}
		if x.key.dport != "" {
			body["dport"] = x.key.dport
		}
		if x.key.source != "" {
			body["source"] = x.key.source
		}
		err := c.settle(ctx, fmt.Sprintf("VM %s: add firewall rule %s", vm.host, x.key), func(ctx context.Context) error {
			return c.client.Post(ctx, base+"/rules", body, nil)
		}, func(ctx context.Context) (bool, error) {
			rules, err := c.readRules(ctx, vm)
			return slices.ContainsFunc(rules, func(r fwRule) bool {
				return r.plain() && r.Enable == 1 && r.key() == x.key && r.Comment == x.comment
			}), err
		})
		if err != nil {
			return fmt.Errorf("add firewall rule %s: %w", x.key, err)
		}
	}
	if len(d.missing) == 0 && len(d.stale) == 0 {
		return nil
	}
	return c.deleteStale(ctx, p, vm)
}

// deleteStale reads the rules and deletes the stale ones (outside the
// policy, disabled, or duplicates, such as an add a lost answer hid and
// a late delivery made twice), highest position first, one at a time:
// each delete carries the digest of the list its position was read from,
// so a delete repeated after a lost answer fails instead of removing the
// rule that moved into that position.
func (c *Cloud) deleteStale(ctx context.Context, p firewallPolicy, vm vmTarget) error {
	for failed := 0; ; {
		rules, err := c.readRules(ctx, vm)
		if err != nil {
			return err
		}
		stale := p.diff(nil, rules).stale
		if len(stale) == 0 {
			return nil
		}
		r := stale[len(stale)-1]
		path := fmt.Sprintf("%s/firewall/rules/%d?digest=%s", vmPath(vm.node, vm.vmid), r.Pos, url.QueryEscape(r.Digest))
		err = c.client.Delete(ctx, path, nil)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || failed == retries {
			return fmt.Errorf("delete firewall rule %d (%s): %w", r.Pos, r.key(), err)
		}
		failed++
		c.opts.Logf("proxmox: VM %s: delete firewall rule %d (%s): %v; reading the rules again (%d of %d)", vm.host, r.Pos, r.key(), err, failed, retries)
		if err := ctxwait.Sleep(ctx, time.Duration(250<<failed)*time.Millisecond); err != nil {
			return err
		}
	}
}
