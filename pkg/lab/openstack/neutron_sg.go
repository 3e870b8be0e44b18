package openstack

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// securityGroups is the security group kind.
func securityGroups() resource[SecurityGroup, *SecurityGroup] {
	return resource[SecurityGroup, *SecurityGroup]{
		kind: "security_group", path: "security-groups",
		items:   func(c *state) map[string]*SecurityGroup { return c.sgs },
		find:    (*state).sg,
		view:    func(c *state, g *SecurityGroup, _ *token) map[string]any { return c.sgView(g) },
		prepare: func(c *state, t *token) { c.defaultSG(t.project) },
		create:  (*state).createSG, update: (*state).updateSG, attrs: sgAttrs(),
		remove: (*state).deleteSG,
	}
}

// securityGroupRules is the security group rule kind (no update).
func securityGroupRules() resource[SecurityGroupRule, *SecurityGroupRule] {
	return resource[SecurityGroupRule, *SecurityGroupRule]{
		kind: "security_group_rule", path: "security-group-rules",
		items:   func(c *state) map[string]*SecurityGroupRule { return c.rules },
		find:    (*state).rule,
		view:    func(_ *state, r *SecurityGroupRule, _ *token) map[string]any { return ruleView(r) },
		prepare: func(c *state, t *token) { c.defaultSG(t.project) },
		create:  (*state).createRule,
		remove: func(c *state, r *SecurityGroupRule, _ *token) *apiError {
			delete(c.rules, r.ID)
			return nil
		},
	}
}

// sgAttrs are the attributes a security group POST or PUT may carry.
func sgAttrs() []string { return []string{"name", "description", "stateful"} }

func (c *state) sg(id string, t *token) (*SecurityGroup, *apiError) {
	g, ok := c.sgs[id]
	if !ok || !visible(t, g.ProjectID) {
		return nil, errf(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", id)
	}
	return g, nil
}

func (c *state) rule(id string, t *token) (*SecurityGroupRule, *apiError) {
	r, ok := c.rules[id]
	if !ok || !visible(t, r.ProjectID) {
		return nil, errf(http.StatusNotFound, "SecurityGroupRuleNotFound", "Security group rule %s does not exist", id)
	}
	return r, nil
}

// defaultSG returns the project's default group, creating it (with
// Neutron's default rules) on first use; callers hold the lock.
func (c *state) defaultSG(project string) *SecurityGroup {
	for _, g := range c.sgs {
		if g.ProjectID == project && g.Name == "default" {
			return g
		}
	}
	g := c.addSG(project, "default", "Default security group")
	for _, et := range []string{"IPv4", "IPv6"} {
		c.addRule(&SecurityGroupRule{SecurityGroupID: g.ID, ProjectID: project, Direction: "ingress", EtherType: et, RemoteGroupID: g.ID})
	}
	return g
}

func (c *state) addSG(project, name, description string) *SecurityGroup {
	g := &SecurityGroup{meta: c.newMeta(), ID: newUUID(), Name: name, Description: description, ProjectID: project, Stateful: true}
	c.sgs[g.ID] = g
	for _, et := range []string{"IPv4", "IPv6"} {
		c.addRule(&SecurityGroupRule{SecurityGroupID: g.ID, ProjectID: project, Direction: "egress", EtherType: et})
	}
	return g
}

func (c *state) addRule(r *SecurityGroupRule) {
	r.meta, r.ID = c.newMeta(), newUUID()
	c.rules[r.ID] = r
}

func (c *state) sgView(g *SecurityGroup) map[string]any {
	v := baseView(g.ID, g.Name, g.ProjectID, g.Description, g.Tags, g.meta)
	rules := []map[string]any{}
	for _, r := range sortedValues(c.rules, func(x *SecurityGroupRule) int64 { return x.seq }) {
		if r.SecurityGroupID == g.ID {
			rules = append(rules, ruleView(r))
		}
	}
	v["security_group_rules"], v["stateful"], v["shared"] = rules, g.Stateful, false
	return v
}

func ruleView(r *SecurityGroupRule) map[string]any {
	v := baseView(r.ID, "\x00", r.ProjectID, r.Description, nil, r.meta)
	delete(v, "tags")
	nilIfEmpty := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	intOrNil := func(p *int) any {
		if p == nil {
			return nil
		}
		return *p
	}
	maps.Copy(v, map[string]any{
		"security_group_id": r.SecurityGroupID, "direction": r.Direction, "ethertype": r.EtherType, "protocol": nilIfEmpty(r.Protocol),
		"port_range_min": intOrNil(r.PortRangeMin), "port_range_max": intOrNil(r.PortRangeMax),
		"remote_ip_prefix": nilIfEmpty(r.RemoteIPPrefix), "remote_group_id": nilIfEmpty(r.RemoteGroupID), "remote_address_group_id": nil,
		"normalized_cidr": nilIfEmpty(normalizedCIDR(r.RemoteIPPrefix)), "belongs_to_default_sg": false,
	})
	return v
}

func normalizedCIDR(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	return ""
}

func (c *state) createSG(spec map[string]any, t *token) (*SecurityGroup, *apiError) {
	if e := c.checkAttrs(spec, true, sgAttrs(), nil); e != nil {
		return nil, e
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	if str(spec, "name") == "default" {
		return nil, errf(http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
	}
	if over(c.quota(project).SecurityGroups, c.count(project, "security_groups"), 1) ||
		over(c.quota(project).SecurityGroupRules, c.count(project, "security_group_rules"), 2) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['security_group'].")
	}
	c.defaultSG(project)
	g := c.addSG(project, str(spec, "name"), str(spec, "description"))
	g.Stateful = boolOr(spec, "stateful", true)
	g.Tags, _ = strList(spec, "tags")
	return g, nil
}

func (c *state) updateSG(g *SecurityGroup, spec map[string]any, _ *token) *apiError {
	g.Name, g.Description, g.Stateful = strOr(spec, "name", g.Name), strOr(spec, "description", g.Description), boolOr(spec, "stateful", g.Stateful)
	g.touch()
	return nil
}

func (c *state) deleteSG(g *SecurityGroup, t *token) *apiError {
	if g.Name == "default" && !t.admin() {
		return errf(http.StatusConflict, "SecurityGroupCannotRemoveDefault", "Insufficient rights for removing default security group.")
	}
	for _, p := range c.ports {
		if slices.Contains(p.SecurityGroups, g.ID) {
			return errf(http.StatusConflict, "SecurityGroupInUse", "Security Group %s in use.", g.ID)
		}
	}
	for id, rule := range c.rules {
		if rule.SecurityGroupID == g.ID || rule.RemoteGroupID == g.ID {
			delete(c.rules, id)
		}
	}
	delete(c.sgs, g.ID)
	return nil
}

func (c *state) createRule(spec map[string]any, t *token) (*SecurityGroupRule, *apiError) {
	e := c.checkAttrs(spec, true, []string{
		"security_group_id", "direction", "ethertype", "protocol", "port_range_min", "port_range_max",
		"remote_ip_prefix", "remote_group_id", "remote_address_group_id", "description",
	}, nil)
	if e != nil {
		return nil, e
	}
	rule, e := c.newRule(spec, t)
	if e != nil {
		return nil, e
	}
	c.addRule(rule)
	return rule, nil
}

// protoNumber maps protocol names to the numbers duplicates compare on.
func protoNumber(p string) string {
	switch strings.ToLower(p) {
	case "tcp":
		return "6"
	case "udp":
		return "17"
	case "icmp":
		return "1"
	case "any", "":
		return ""
	}
	return p
}

// newRule validates a rule POST; callers hold the lock.
func (c *state) newRule(spec map[string]any, t *token) (*SecurityGroupRule, *apiError) {
	g, e := c.sg(str(spec, "security_group_id"), t)
	if e != nil {
		return nil, e
	}
	r := &SecurityGroupRule{
		SecurityGroupID: g.ID, ProjectID: g.ProjectID, Direction: str(spec, "direction"), EtherType: strOr(spec, "ethertype", "IPv4"),
		RemoteIPPrefix: str(spec, "remote_ip_prefix"), RemoteGroupID: str(spec, "remote_group_id"), Description: str(spec, "description"),
	}
	if r.Direction != "ingress" && r.Direction != "egress" {
		return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for direction. Reason: '%s' is not in ['ingress', 'egress'].", r.Direction)
	}
	if r.EtherType != "IPv4" && r.EtherType != "IPv6" {
		return nil, errf(http.StatusBadRequest, "SecurityGroupRuleInvalidEtherType", "Security group rule for ethertype '%s' not supported. Allowed values are ['IPv4', 'IPv6'].", r.EtherType)
	}
	switch p := spec["protocol"].(type) {
	case string:
		r.Protocol = strings.ToLower(p)
	case float64:
		r.Protocol = strconv.Itoa(int(p))
	}
	if n, err := strconv.Atoi(protoNumber(r.Protocol)); protoNumber(r.Protocol) != "" && (err != nil || n < 0 || n > 255) {
		return nil, errf(http.StatusBadRequest, "SecurityGroupRuleInvalidProtocol", "Security group rule protocol %s not supported. Only protocol values [None, 'ah', 'dccp', 'egp', 'esp', 'gre', 'icmp', 'icmpv6', 'igmp', 'ipip', 'ipv6-encap', 'ipv6-frag', 'ipv6-icmp', 'ipv6-nonxt', 'ipv6-opts', 'ipv6-route', 'ospf', 'pgm', 'rsvp', 'sctp', 'tcp', 'udp', 'udplite', 'vrrp'] and integer representations [0 to 255] are supported.", r.Protocol)
	}
	if e := r.setPorts(spec); e != nil {
		return nil, e
	}
	if r.RemoteIPPrefix != "" && r.RemoteGroupID != "" {
		return nil, errf(http.StatusBadRequest, "SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or remote_group_id may be provided.")
	}
	if r.RemoteIPPrefix != "" {
		p, err := netip.ParsePrefix(normalizedCIDR(r.RemoteIPPrefix))
		if err != nil {
			return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for remote_ip_prefix. Reason: '%s' is not a valid IP subnet.", r.RemoteIPPrefix)
		}
		if p.Addr().Is4() != (r.EtherType == "IPv4") {
			return nil, errf(http.StatusBadRequest, "SecurityGroupRuleParameterConflict", "Conflicting value ethertype %s for CIDR %s", r.EtherType, r.RemoteIPPrefix)
		}
	}
	if r.RemoteGroupID != "" {
		if _, e := c.sg(r.RemoteGroupID, t); e != nil {
			return nil, e
		}
	}
	for _, other := range sortedValues(c.rules, func(x *SecurityGroupRule) int64 { return x.seq }) {
		if sameRule(other, r) {
			return nil, errf(http.StatusConflict, "SecurityGroupRuleExists", "Security group rule already exists. Rule id is %s.", other.ID)
		}
	}
	if over(c.quota(r.ProjectID).SecurityGroupRules, c.count(r.ProjectID, "security_group_rules"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['security_group_rule'].")
	}
	return r, nil
}

// setPorts validates port_range_min/max against the protocol.
func (r *SecurityGroupRule) setPorts(spec map[string]any) *apiError {
	_, hasMin := spec["port_range_min"].(float64)
	_, hasMax := spec["port_range_max"].(float64)
	if !hasMin && !hasMax {
		return nil
	}
	if r.Protocol == "" {
		return errf(http.StatusBadRequest, "SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.")
	}
	lo, hi := intOr(spec, "port_range_min", -1), intOr(spec, "port_range_max", -1)
	switch protoNumber(r.Protocol) {
	case "6", "17":
		if !hasMin || !hasMax || lo > hi {
			return errf(http.StatusBadRequest, "SecurityGroupInvalidPortRange", "For TCP/UDP protocols, port_range_min must be <= port_range_max")
		}
		if lo < 1 || hi > 65535 {
			return errf(http.StatusBadRequest, "SecurityGroupInvalidPortValue", "Invalid value for port %d", max(lo, hi))
		}
	}
	if hasMin {
		r.PortRangeMin = &lo
	}
	if hasMax {
		r.PortRangeMax = &hi
	}
	return nil
}

func sameRule(a, b *SecurityGroupRule) bool {
	ptrEq := func(x, y *int) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.SecurityGroupID == b.SecurityGroupID && a.Direction == b.Direction && a.EtherType == b.EtherType &&
		protoNumber(a.Protocol) == protoNumber(b.Protocol) && ptrEq(a.PortRangeMin, b.PortRangeMin) && ptrEq(a.PortRangeMax, b.PortRangeMax) &&
		normalizedCIDR(a.RemoteIPPrefix) == normalizedCIDR(b.RemoteIPPrefix) && a.RemoteGroupID == b.RemoteGroupID
}
