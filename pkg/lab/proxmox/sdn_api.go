package proxmox

import (
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

func (s *Server) sdnRoutes(rt *router) {
	rt.handle("GET", "/cluster/sdn", s.sdnIndex)
	rt.handle("PUT", "/cluster/sdn", s.applySDNAPI)
	for _, k := range []SDNKind{SDNControllers, SDNZones, SDNVNets} {
		base := "/cluster/sdn/" + string(k)
		rt.handle("GET", base, s.listSDN(k))
		rt.handle("POST", base, s.createSDN(k))
		rt.handle("GET", base+"/{id}", s.readSDN(k))
		rt.handle("PUT", base+"/{id}", s.updateSDN(k))
		rt.handle("DELETE", base+"/{id}", s.deleteSDN(k))
	}
	sub := "/cluster/sdn/vnets/{vnet}/subnets"
	rt.handle("GET", sub, s.listSDN(SDNSubnets))
	rt.handle("POST", sub, s.createSDN(SDNSubnets))
	rt.handle("GET", sub+"/{id}", s.readSDN(SDNSubnets))
	rt.handle("PUT", sub+"/{id}", s.updateSDN(SDNSubnets))
	rt.handle("DELETE", sub+"/{id}", s.deleteSDN(SDNSubnets))
}

func (s *Server) sdnIndex(c *call) (any, error) {
	return []map[string]string{{"id": "controllers"}, {"id": "dns"}, {"id": "fabrics"}, {"id": "ipams"}, {"id": "vnets"}, {"id": "zones"}}, nil
}

// sdnOptions are the fields each kind accepts besides its id.
var sdnOptions = map[SDNKind][]string{
	SDNControllers: {"type", "asn", "peers", "ebgp", "ebgp-multihop", "bgp-multipath-as-path-relax", "loopback", "node", "isis-domain", "isis-ifaces", "isis-net", "fabric", "route-map-in", "route-map-out"},
	SDNZones: {
		"type", "advertise-subnets", "bridge", "bridge-disable-mac-learning", "controller", "dhcp", "disable-arp-nd-suppression", "dns", "dnszone",
		"dp-id", "exitnodes", "exitnodes-local-routing", "exitnodes-primary", "fabric", "ipam", "mac", "mtu", "nodes", "peers", "reversedns",
		"rt-import", "tag", "vlan-protocol", "vrf-vxlan", "vxlan-port",
	},
	SDNVNets:   {"type", "zone", "alias", "tag", "vlanaware", "isolate-ports"},
	SDNSubnets: {"type", "vnet", "gateway", "snat", "dhcp-range", "dhcp-dns-server", "dnszoneprefix"},
}

var sdnTypes = map[SDNKind][]string{
	SDNControllers: {"bgp", "evpn", "faucet", "isis"},
	SDNZones:       {"evpn", "faucet", "qinq", "simple", "vlan", "vxlan"},
	SDNVNets:       {"vnet"},
	SDNSubnets:     {"subnet"},
}

var sdnIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9]*[a-z0-9]$`)

// aclPath is the ACL path guarding an object. The caller holds s.mu.
func (s *Server) sdnACLPath(k SDNKind, id string, obj map[string]string) string {
	switch k {
	case SDNZones:
		return "/sdn/zones/" + id
	case SDNVNets:
		return "/sdn/zones/" + obj["zone"] + "/" + id
	case SDNSubnets:
		return "/sdn/zones/" + s.sdn.staged[SDNVNets][obj["vnet"]]["zone"] + "/" + obj["vnet"]
	default:
		return "/sdn/controllers/" + id
	}
}

// sdnView is the config a GET shows: staged, running, or the pending view.
func (s *Server) sdnView(c *call, k SDNKind) (map[string]map[string]any, error) {
	pending, err := c.p.boolean("pending", false)
	if err != nil {
		return nil, err
	}
	running, err := c.p.boolean("running", false)
	if err != nil {
		return nil, err
	}
	switch {
	case pending:
		return pendingView(s.sdn.running[k], s.sdn.staged[k]), nil
	case running:
		return plainView(s.sdn.running[k]), nil
	default:
		return plainView(s.sdn.staged[k]), nil
	}
}

func plainView(objs map[string]map[string]string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, o := range objs {
		out[id] = typed(o, sdnIsNumeric)
	}
	return out
}

func (s *Server) decorate(k SDNKind, id string, o map[string]any) map[string]any {
	o[k.idKey()] = id
	o["digest"] = digestOf(flatten(s.sdn.staged[k]))
	if k == SDNSubnets {
		subnetFields(id, o)
		o["subnet"] = id
	}
	return o
}

func flatten(objs map[string]map[string]string) map[string]string {
	m := map[string]string{}
	for id, o := range objs {
		for k, v := range o {
			m[id+"."+k] = v
		}
	}
	return m
}

func (s *Server) listSDN(k SDNKind) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(schema{names: []string{"type", "running", "pending", "vnet"}}); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		view, err := s.sdnView(c, k)
		if err != nil {
			return nil, err
		}
		out := []map[string]any{}
		for _, id := range sortedKeys(view) {
			o := view[id]
			st := s.sdn.staged[k][id]
			if st == nil {
				st = s.sdn.running[k][id]
			}
			switch {
			case c.p.has("type") && o["type"] != c.p.str("type"),
				k == SDNSubnets && !subnetOf(st, o, c.path["vnet"]),
				!c.hasAnyLocked(s.sdnACLPath(k, id, st), "SDN.Audit", "SDN.Allocate"):
				continue
			}
			out = append(out, s.decorate(k, id, o))
		}
		return out, nil
	}
}

func subnetOf(st map[string]string, o map[string]any, vnet string) bool {
	if st != nil {
		return st["vnet"] == vnet
	}
	return o["vnet"] == vnet
}

func (s *Server) readSDN(k SDNKind) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(schema{names: []string{"running", "pending"}}); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		id := c.path["id"]
		view, err := s.sdnView(c, k)
		if err != nil {
			return nil, err
		}
		o := view[id]
		if o == nil || (k == SDNSubnets && !subnetOf(s.sdn.staged[k][id], o, c.path["vnet"])) {
			return nil, fail("%s '%s' does not exist", k.what(), id)
		}
		obj := s.sdn.staged[k][id]
		if obj == nil {
			obj = s.sdn.running[k][id]
		}
		if !c.hasAnyLocked(s.sdnACLPath(k, id, obj), "SDN.Audit", "SDN.Allocate") {
			return nil, forbidden(s.sdnACLPath(k, id, obj), "SDN.Audit")
		}
		return s.decorate(k, id, o), nil
	}
}

// sdnParams collects an object's fields from the call, normalising node
// lists (PVE stores them as a set and prints them sorted).
func sdnParams(c *call, k SDNKind) map[string]string {
	m := map[string]string{}
	for _, f := range sdnOptions[k] {
		if !c.p.has(f) {
			continue
		}
		v := c.p.str(f)
		switch f {
		case "nodes", "exitnodes", "peers":
			l := splitList(v)
			if f != "peers" {
				slices.Sort(l)
			}
			v = strings.Join(l, ",")
		case "dhcp-range":
			v = strings.Join(c.p.v[f], "\x00")
		}
		m[f] = v
	}
	return m
}

func sdnSchema(k SDNKind, update bool) schema {
	names := append(slices.Clone(sdnOptions[k]), k.idKey(), "lock-token")
	if update {
		names = append(names, "delete", "digest")
	}
	if k == SDNSubnets {
		names = append(names, "vnet")
	}
	return schema{names: names}
}

// subnetID is PVE's subnet id: <zone>-<network>-<mask>.
func subnetID(zone, cidr string) (string, netip.Prefix, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Masked() != p {
		return "", netip.Prefix{}, paramErr1("subnet", "invalid format - value does not look like a valid CIDR network")
	}
	return zone + "-" + p.Addr().String() + "-" + itoa(p.Bits()), p, nil
}
