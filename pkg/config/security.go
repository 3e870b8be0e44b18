package config

import "strings"

func (s *SecurityRules) decodeNode(d *decoder, n *node, path string) {
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping of rule name: rule, not %s", describe(n))
		return
	}
	out := SecurityRules{}
	for _, e := range n.entries {
		if e.val.isNull() {
			continue
		}
		rp := joinPath(path, e.key)
		d.seen[rp] = e.val
		if e.val.kind != mapNode {
			d.errf(e.val, rp, "must be a mapping of label: CIDR, or {port: N, hosts: {label: CIDR}}, not %s", describe(e.val))
			continue
		}
		rule := SecurityRule{Name: e.key}
		if e.val.index("hosts") >= 0 || e.val.index("port") >= 0 {
			d.longRule(e.val, &rule, rp)
		} else {
			rule.Hosts = d.hosts(e.val, rp)
		}
		out = append(out, rule)
	}
	*s = out
}

// longRule decodes rule: {port: N, hosts: {label: CIDR}}.
func (d *decoder) longRule(n *node, r *SecurityRule, path string) {
	for _, e := range n.entries {
		kp := joinPath(path, e.key)
		switch e.key {
		case "port":
			if e.val.isNull() {
				continue
			}
			d.seen[kp] = e.val
			if i, ok := d.integer(e.val, kp); ok {
				if i < 1 || i > 65535 {
					d.errf(e.val, kp, "must be between 1 and 65535, not %d", i)
					continue
				}
				r.Port = int(i)
			}
		case "hosts":
			if e.val.isNull() {
				continue
			}
			d.seen[kp] = e.val
			r.Hosts = d.hosts(e.val, kp)
		default:
			d.failed[kp] = true
			msg := kp + " is not a valid key; a rule with port or hosts takes only those two keys"
			if s := suggest(e.key, []string{"hosts", "port"}); s != "" {
				msg += " (did you mean " + s + "?)"
			}
			d.probs.add(e.val.file, e.line, kp, msg)
		}
	}
}

// hosts decodes {label: CIDR}: strict IPv4 network addresses.
func (d *decoder) hosts(n *node, path string) []SecurityHost {
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping of label: CIDR, not %s", describe(n))
		return nil
	}
	out := []SecurityHost{}
	for _, e := range n.entries {
		if e.val.isNull() {
			continue
		}
		kp := joinPath(path, e.key)
		p, ok := d.prefix(e.val, kp)
		if !ok {
			continue
		}
		if p.Masked() != p {
			d.errf(e.val, kp, "%s is not a network address (did you mean %s, or %s/32 for one host?)", p, p.Masked(), p.Addr())
			continue
		}
		out = append(out, SecurityHost{Label: e.key, CIDR: p})
	}
	return out
}

// security resolves ports and checks rule names (§2.3 security).
func (v *validator) security() {
	byTalos := map[string]string{}
	for i := range v.c.Security {
		r := &v.c.Security[i]
		path := "security." + r.Name
		def := defaultPort(r.Name)
		switch {
		case v.failed(path + ".port"):
		case !v.has(path+".port") && def == 0:
			v.errf(path, "requires an explicit 'port' (only kubernetes, talos, http and https have defaults)")
		case !v.has(path + ".port"):
			r.Port = def
		case (r.Name == "http" || r.Name == "https") && r.Port != def:
			v.errf(path+".port", "cannot change: %s always means port %d; use a differently named rule for port %d", r.Name, def, r.Port)
		}
		tn := r.TalosName()
		if other, dup := byTalos[tn]; dup {
			v.errf(path, "and security.%s both become the Talos rule %s; rename one", other, tn)
		}
		byTalos[tn] = r.Name
	}
}

// quoteList renders names for messages: a, b and c.
func quoteList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
