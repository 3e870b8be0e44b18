package proxmox

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
)

var (
	sdnBools = []string{"advertise-subnets", "disable-arp-nd-suppression", "exitnodes-local-routing", "vlanaware", "isolate-ports", "snat", "ebgp", "bgp-multipath-as-path-relax", "bridge-disable-mac-learning"}
	sdnInts  = []string{"mtu", "vrf-vxlan", "tag", "vxlan-port", "asn", "ebgp-multihop", "dp-id"}
)

func itoa(n int) string { return strconv.Itoa(n) }

// checkFields validates types of an object's fields in place.
func checkFields(o map[string]string) error {
	for k, v := range o {
		switch {
		case slices.Contains(sdnBools, k):
			nb, err := normBool(k, v)
			if err != nil {
				return err
			}
			o[k] = nb
		case slices.Contains(sdnInts, k):
			n, err := parseInt(k, v)
			if err != nil {
				return err
			}
			o[k] = itoa(n)
		}
	}
	return nil
}

// validateSDN runs the checks of the kind's on_update_hook against the
// staged config with obj in place. The caller holds s.mu.
func (s *Server) validateSDN(k SDNKind, id string, obj map[string]string) error {
	staged := s.sdn.staged
	if !slices.Contains(sdnTypes[k], obj["type"]) {
		return paramErr1("type", "value '%s' does not have a value in the enumeration", obj["type"])
	}
	switch k {
	case SDNZones:
		if obj["type"] != "evpn" {
			return nil
		}
		ctl := staged[SDNControllers][obj["controller"]]
		if ctl == nil || ctl["type"] != "evpn" {
			return paramErr1("controller", "evpn controller '%s' does not exist", obj["controller"])
		}
		if obj["vrf-vxlan"] == "" {
			return paramErr1("vrf-vxlan", "property is missing and it is not optional")
		}
		return s.checkVNI(id, "", obj["vrf-vxlan"])
	case SDNVNets:
		if !sdnIDRe.MatchString(id) || len(id) > 8 {
			return paramErr1("vnet", "invalid format - vnet ID '%s' must be 2-8 letters or digits, starting with a letter", id)
		}
		z := staged[SDNZones][obj["zone"]]
		if z == nil {
			return paramErr1("zone", "zone '%s' does not exist", obj["zone"])
		}
		switch z["type"] {
		case "vxlan", "evpn":
			if obj["tag"] == "" {
				return fail("missing vxlan tag")
			}
			return s.checkVNI("", id, obj["tag"])
		case "vlan", "qinq":
			if n := atoiOr(obj["tag"], 0); obj["tag"] != "" && (n < 1 || n > 4094) {
				return paramErr1("tag", "vlan tag %s is not in range 1 - 4094", obj["tag"])
			}
		}
	case SDNSubnets:
		if gw := obj["gateway"]; gw != "" {
			a, err := netip.ParseAddr(gw)
			p, _ := netip.ParsePrefix(subnetCIDR(id))
			if err != nil || !p.Contains(a) {
				return paramErr1("gateway", "gateway ip %s is not in subnet %s", gw, subnetCIDR(id))
			}
		}
	case SDNControllers:
		if obj["type"] == "evpn" && (obj["asn"] == "" || obj["peers"] == "") {
			return paramErr1("asn", "evpn controller needs asn and peers")
		}
	}
	return nil
}

// checkVNI refuses a VXLAN id already used by another EVPN zone's VRF or
// another VXLAN/EVPN VNet (zoneID/vnetID name the object being written).
func (s *Server) checkVNI(zoneID, vnetID, vni string) error {
	staged := s.sdn.staged
	for id, z := range staged[SDNZones] {
		if id != zoneID && z["type"] == "evpn" && z["vrf-vxlan"] == vni {
			return fail("vxlan tag %s is already declared as vrf-vxlan in zone %s", vni, id)
		}
	}
	for id, v := range staged[SDNVNets] {
		zt := staged[SDNZones][v["zone"]]["type"]
		if id != vnetID && (zt == "vxlan" || zt == "evpn") && v["tag"] == vni {
			return fail("tag %s already exists in vnet %s", vni, id)
		}
	}
	return nil
}

func subnetCIDR(id string) string {
	o := map[string]any{}
	subnetFields(id, o)
	c, _ := o["cidr"].(string)
	return c
}

func (s *Server) createSDN(k SDNKind) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(withRequired(sdnSchema(k, false), k.idKey())); err != nil {
			return nil, err
		}
		obj := sdnParams(c, k)
		if err := checkFields(obj); err != nil {
			return nil, err
		}
		id := c.p.str(k.idKey())
		s.mu.Lock()
		defer s.mu.Unlock()
		switch k {
		case SDNZones:
			if !sdnIDRe.MatchString(id) || len(id) > 8 {
				return nil, paramErr1("zone", "invalid format - zone ID '%s' must be 2-8 letters or digits, starting with a letter", id)
			}
		case SDNVNets:
			obj["type"] = "vnet"
		case SDNSubnets:
			vn := s.sdn.staged[SDNVNets][c.path["vnet"]]
			if vn == nil {
				return nil, fail("sdn vnet '%s' does not exist", c.path["vnet"])
			}
			sid, _, err := subnetID(vn["zone"], id)
			if err != nil {
				return nil, err
			}
			id, obj["type"], obj["vnet"] = sid, "subnet", c.path["vnet"]
		default: // controllers: any id PVE's format accepts
		}
		if path := s.sdnACLPath(k, id, obj); !c.hasLocked(path, "SDN.Allocate") {
			return nil, forbidden(path, "SDN.Allocate")
		}
		if s.sdn.staged[k][id] != nil {
			return nil, fail("create %s object failed: %s object ID '%s' already defined", k.what(), k.what(), id)
		}
		if err := s.validateSDN(k, id, obj); err != nil {
			return nil, wrapSDN(err, "create", k)
		}
		s.sdn.staged[k][id] = obj
		return nil, nil
	}
}

// wrapSDN prefixes plain failures the way lock_sdn_config does.
func wrapSDN(err error, op string, k SDNKind) error {
	if ae, ok := err.(*apiError); ok && ae.status == 500 { //nolint:errorlint // our own unwrapped type
		return fail("%s %s object failed: %s", op, k.what(), ae.message)
	}
	return err
}

func (s *Server) updateSDN(k SDNKind) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(sdnSchema(k, true)); err != nil {
			return nil, err
		}
		upd := sdnParams(c, k)
		if err := checkFields(upd); err != nil {
			return nil, err
		}
		id := c.path["id"]
		s.mu.Lock()
		defer s.mu.Unlock()
		cur := s.sdn.staged[k][id]
		if cur == nil || (k == SDNSubnets && cur["vnet"] != c.path["vnet"]) {
			return nil, fail("%s '%s' does not exist", k.what(), id)
		}
		if path := s.sdnACLPath(k, id, cur); !c.hasLocked(path, "SDN.Allocate") {
			return nil, forbidden(path, "SDN.Allocate")
		}
		if err := c.checkDigest(digestOf(flatten(s.sdn.staged[k]))); err != nil {
			return nil, err
		}
		if t := upd["type"]; t != "" && t != cur["type"] {
			return nil, paramErr1("type", "can't change type of %s '%s'", k.what(), id)
		}
		next := cloneMap(cur)
		for _, f := range splitList(c.p.str("delete")) {
			delete(next, f)
		}
		maps.Copy(next, upd)
		if err := s.validateSDN(k, id, next); err != nil {
			return nil, wrapSDN(err, "update", k)
		}
		s.sdn.staged[k][id] = next
		return nil, nil
	}
}

func (s *Server) deleteSDN(k SDNKind) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(schema{names: []string{"lock-token", "digest"}}); err != nil {
			return nil, err
		}
		id := c.path["id"]
		s.mu.Lock()
		defer s.mu.Unlock()
		staged := s.sdn.staged
		cur := staged[k][id]
		if cur == nil || (k == SDNSubnets && cur["vnet"] != c.path["vnet"]) {
			return nil, fail("%s '%s' does not exist", k.what(), id)
		}
		if path := s.sdnACLPath(k, id, cur); !c.hasLocked(path, "SDN.Allocate") {
			return nil, forbidden(path, "SDN.Allocate")
		}
		for _, oid := range sortedKeys(staged[SDNVNets]) {
			if k == SDNZones && staged[SDNVNets][oid]["zone"] == id {
				return nil, fail("delete sdn zone object failed: cannot delete zone '%s', vnet '%s' is using it", id, oid)
			}
		}
		for _, oid := range sortedKeys(staged[SDNSubnets]) {
			if k == SDNVNets && staged[SDNSubnets][oid]["vnet"] == id {
				return nil, fail("delete sdn vnet object failed: cannot delete vnet '%s', subnet '%s' is using it", id, oid)
			}
		}
		for _, oid := range sortedKeys(staged[SDNZones]) {
			if k == SDNControllers && staged[SDNZones][oid]["controller"] == id {
				return nil, fail("delete sdn controller object failed: cannot delete controller '%s', zone '%s' is using it", id, oid)
			}
		}
		delete(staged[k], id)
		return nil, nil
	}
}

// applySDNAPI is PUT /cluster/sdn: the staged config is committed at once
// and a "reloadnetworkall" task brings every online node's network to it.
func (s *Server) applySDNAPI(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"lock-token", "release-lock"}}); err != nil {
		return nil, err
	}
	if err := c.require("/sdn", "SDN.Allocate"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitSDN()
	local := s.nodeOrder[0]
	for _, n := range s.nodeOrder {
		if !s.nodes[n].Offline {
			local = n
			break
		}
	}
	return s.startTask(taskSpec{
		node: local, typ: "reloadnetworkall", user: c.tok.id,
		finish: func() ([]string, error) {
			var log []string
			for _, n := range s.nodeOrder {
				if s.nodes[n].Offline {
					log = append(log, "node "+n+": unable to reload network: No route to host")
					continue
				}
				log = append(log, "reloading network config on node "+n)
			}
			s.reloadSDN()
			return log, nil
		},
	}), nil
}
