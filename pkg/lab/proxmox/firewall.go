package proxmox

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

func (s *Server) firewallRoutes(rt *router) {
	rt.handle("GET", "/cluster/firewall/options", s.getClusterFirewall)
	rt.handle("PUT", "/cluster/firewall/options", s.setClusterFirewall)
	base := "/nodes/{node}/qemu/{vmid}/firewall"
	rt.handle("GET", base, s.vmFirewallIndex)
	rt.handle("GET", base+"/options", s.getVMFirewall)
	rt.handle("PUT", base+"/options", s.setVMFirewall)
	rt.handle("GET", base+"/rules", s.listRules)
	rt.handle("POST", base+"/rules", s.createRule)
	rt.handle("GET", base+"/rules/{pos}", s.getRule)
	rt.handle("PUT", base+"/rules/{pos}", s.updateRule)
	rt.handle("DELETE", base+"/rules/{pos}", s.deleteRule)
}

// SetDatacenterFirewall flips the datacenter firewall's enable switch.
func (s *Server) SetDatacenterFirewall(enabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fwCluster["enable"] = strconv.Itoa(b2i(enabled))
}

var (
	policies  = []string{"ACCEPT", "REJECT", "DROP"}
	fwNumeric = func(k string) bool {
		return slices.Contains([]string{"enable", "ebtables", "dhcp", "ipfilter", "macfilter", "ndp", "radv", "pos", "ipversion"}, k)
	}
	clusterFwBools  = []string{"ebtables"}
	vmFwBools       = []string{"enable", "dhcp", "ipfilter", "macfilter", "ndp", "radv"}
	clusterFwSchema = schema{names: []string{"enable", "policy_in", "policy_out", "policy_forward", "ebtables", "log_ratelimit", "delete", "digest"}}
	vmFwSchema      = schema{names: []string{"enable", "dhcp", "ipfilter", "macfilter", "ndp", "radv", "policy_in", "policy_out", "log_level_in", "log_level_out", "delete", "digest"}}
)

func withDigest(m map[string]string) map[string]any {
	out := typed(m, fwNumeric)
	out["digest"] = digestOf(m)
	return out
}

// setOptions validates and applies an options update (delete list, digest).
func setOptions(c *call, opts map[string]string, bools []string) error {
	if err := c.checkDigest(digestOf(opts)); err != nil {
		return err
	}
	next := cloneMap(opts)
	for _, k := range splitList(c.p.str("delete")) {
		delete(next, k)
	}
	for _, k := range c.p.keys() {
		if k == "delete" || k == "digest" {
			continue
		}
		v := c.p.str(k)
		switch {
		case slices.Contains(bools, k):
			nb, err := normBool(k, v)
			if err != nil {
				return err
			}
			v = nb
		case k == "enable":
			if n, err := parseInt(k, v); err != nil || n < 0 {
				return paramErr1(k, "type check ('integer') failed - got '%s'", v)
			}
		case strings.HasPrefix(k, "policy_"):
			if !slices.Contains(policies, v) {
				return paramErr1(k, "value '%s' does not have a value in the enumeration '%s'", v, strings.Join(policies, ", "))
			}
		}
		next[k] = v
	}
	clear(opts)
	maps.Copy(opts, next)
	return nil
}

func (s *Server) getClusterFirewall(c *call) (any, error) {
	if err := c.require("/", "Sys.Audit"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return withDigest(s.fwCluster), nil
}

func (s *Server) setClusterFirewall(c *call) (any, error) {
	if err := c.p.check(clusterFwSchema); err != nil {
		return nil, err
	}
	if err := c.require("/", "Sys.Modify"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil, setOptions(c, s.fwCluster, clusterFwBools)
}

// lockedVM returns the VM of the path after checking priv on /vms/<vmid>.
// It takes s.mu and returns with it held on success (the caller unlocks).
func (s *Server) lockedVM(c *call, priv string) (*vm, error) {
	vmid, err := c.vmid(priv)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	v, err := s.vmAt(c.path["node"], vmid)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return v, nil
}

func (s *Server) vmFirewallIndex(c *call) (any, error) {
	return []map[string]string{{"name": "aliases"}, {"name": "ipset"}, {"name": "log"}, {"name": "options"}, {"name": "refs"}, {"name": "rules"}}, nil
}

func (s *Server) getVMFirewall(c *call) (any, error) {
	v, err := s.lockedVM(c, "VM.Audit")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return withDigest(v.fwOptions), nil
}

func (s *Server) setVMFirewall(c *call) (any, error) {
	if err := c.p.check(vmFwSchema); err != nil {
		return nil, err
	}
	v, err := s.lockedVM(c, "VM.Config.Network")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return nil, setOptions(c, v.fwOptions, vmFwBools)
}

// ruleKeys are the stored fields of a firewall rule.
var ruleKeys = []string{"type", "action", "macro", "enable", "iface", "source", "dest", "proto", "dport", "sport", "icmp-type", "log", "comment"}

func rulesDigest(v *vm) string {
	m := map[string]string{}
	for i, r := range v.fwRules {
		for k, val := range r {
			m[fmt.Sprintf("%03d.%s", i, k)] = val
		}
	}
	return digestOf(m)
}

func ruleEntry(v *vm, i int) map[string]any {
	out := typed(v.fwRules[i], fwNumeric)
	out["pos"], out["digest"] = i, rulesDigest(v)
	if src := v.fwRules[i]["source"] + v.fwRules[i]["dest"]; src != "" && !strings.Contains(src, ":") && !strings.HasPrefix(src, "+") {
		out["ipversion"] = 4
	}
	return out
}

func (s *Server) listRules(c *call) (any, error) {
	v, err := s.lockedVM(c, "VM.Audit")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []map[string]any{}
	for i := range v.fwRules {
		out = append(out, ruleEntry(v, i))
	}
	return out, nil
}

func rulePos(c *call, v *vm) (int, error) {
	pos, err := strconv.Atoi(c.path["pos"])
	if err != nil || pos < 0 {
		return 0, paramErr1("pos", "type check ('integer') failed - got '%s'", c.path["pos"])
	}
	if pos >= len(v.fwRules) {
		return 0, fail("no rule at position %d", pos)
	}
	return pos, nil
}

func (s *Server) getRule(c *call) (any, error) {
	v, err := s.lockedVM(c, "VM.Audit")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	pos, err := rulePos(c, v)
	if err != nil {
		return nil, err
	}
	return ruleEntry(v, pos), nil
}

// lockedRule returns the VM of the path and the position of the rule the
// path names, after checking VM.Config.Network and the request's digest
// against the rules. Like lockedVM it returns with s.mu held on success
// (the caller unlocks) and released on error.
func (s *Server) lockedRule(c *call) (*vm, int, error) {
	v, err := s.lockedVM(c, "VM.Config.Network")
	if err != nil {
		return nil, 0, err
	}
	pos, err := rulePos(c, v)
	if err == nil {
		err = c.checkDigest(rulesDigest(v))
	}
	if err != nil {
		s.mu.Unlock()
		return nil, 0, err
	}
	return v, pos, nil
}

var ruleSchema = schema{names: append(slices.Clone(ruleKeys), "pos", "digest", "moveto", "delete")}

// verifyRule checks a rule like PVE::Firewall::verify_rule does (loosely).
func verifyRule(r map[string]string) error {
	switch r["type"] {
	case "in", "out", "forward":
		if r["macro"] == "" && !slices.Contains(policies, r["action"]) {
			return paramErr1("action", "value '%s' does not have a value in the enumeration 'ACCEPT, REJECT, DROP'", r["action"])
		}
	case "group":
		if r["action"] == "" {
			return paramErr1("action", "property is missing and it is not optional")
		}
	default:
		return paramErr1("type", "value '%s' does not have a value in the enumeration 'in, out, forward, group'", r["type"])
	}
	if (r["dport"] != "" || r["sport"] != "") && r["macro"] == "" {
		switch r["proto"] {
		case "tcp", "udp", "udplite", "dccp", "sctp", "6", "17":
		default:
			return paramErr1("proto", "protocol '%s' does not support ports", r["proto"])
		}
	}
	if r["enable"] != "" {
		if _, err := parseInt("enable", r["enable"]); err != nil {
			return err
		}
	}
	return nil
}

// createRule inserts the rule at the top (PVE unshifts new rules); a rule
// created without "enable" is disabled.
func (s *Server) createRule(c *call) (any, error) {
	if err := c.p.check(withRequired(ruleSchema, "type", "action")); err != nil {
		return nil, err
	}
	v, err := s.lockedVM(c, "VM.Config.Network")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if err := c.checkDigest(rulesDigest(v)); err != nil {
		return nil, err
	}
	r := map[string]string{"enable": "0"}
	for _, k := range ruleKeys {
		if c.p.has(k) {
			r[k] = c.p.str(k)
		}
	}
	if err := verifyRule(r); err != nil {
		return nil, err
	}
	v.fwRules = slices.Insert(v.fwRules, 0, r)
	return nil, nil
}

func (s *Server) updateRule(c *call) (any, error) {
	if err := c.p.check(ruleSchema); err != nil {
		return nil, err
	}
	v, pos, err := s.lockedRule(c)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if c.p.has("moveto") {
		to, err := c.p.integer("moveto", 0)
		if err != nil {
			return nil, err
		}
		r := v.fwRules[pos]
		v.fwRules = slices.Delete(v.fwRules, pos, pos+1)
		v.fwRules = slices.Insert(v.fwRules, min(max(to, 0), len(v.fwRules)), r)
		return nil, nil
	}
	r := cloneMap(v.fwRules[pos])
	for _, k := range splitList(c.p.str("delete")) {
		delete(r, k)
	}
	for _, k := range ruleKeys {
		if c.p.has(k) {
			r[k] = c.p.str(k)
		}
	}
	if err := verifyRule(r); err != nil {
		return nil, err
	}
	v.fwRules[pos] = r
	return nil, nil
}

func (s *Server) deleteRule(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"digest"}}); err != nil {
		return nil, err
	}
	v, pos, err := s.lockedRule(c)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	v.fwRules = slices.Delete(v.fwRules, pos, pos+1)
	return nil, nil
}
