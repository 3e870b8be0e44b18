package openstack

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// maxTenantMTU is the MTU of VXLAN tenant networks on a 1500-byte underlay.
const maxTenantMTU = 1450

// networks is the network kind.
func networks() resource[Network, *Network] {
	return resource[Network, *Network]{
		kind: "network", path: "networks",
		items: func(c *state) map[string]*Network { return c.networks },
		find:  (*state).network, view: (*state).netView,
		create: (*state).createNetwork, update: (*state).updateNetwork, attrs: networkAttrs(),
		remove: (*state).deleteNetwork,
	}
}

// addNetwork stores a network; callers hold the lock.
func (c *state) addNetwork(project, name string, mtu int, external bool) *Network {
	n := &Network{
		meta: c.newMeta(), ID: newUUID(), Name: name, ProjectID: project, MTU: mtu, External: external,
		AdminStateUp: true, PortSecurity: true, NetworkType: "vxlan", SegmentationID: int(c.seq),
	}
	if external {
		n.NetworkType, n.SegmentationID = "flat", 0
	}
	c.networks[n.ID] = n
	return n
}

func (c *state) netVisible(n *Network, t *token) bool {
	return visible(t, n.ProjectID) || n.Shared || n.External
}

func (c *state) netView(n *Network, t *token) map[string]any {
	v := baseView(n.ID, n.Name, n.ProjectID, n.Description, n.Tags, n.meta)
	var subnets []string
	for _, sn := range sortedValues(c.subnets, func(s *Subnet) int64 { return s.seq }) {
		if sn.NetworkID == n.ID {
			subnets = append(subnets, sn.ID)
		}
	}
	maps.Copy(v, map[string]any{
		"admin_state_up": n.AdminStateUp, "mtu": n.MTU, "status": "ACTIVE", "shared": n.Shared, "router:external": n.External,
		"port_security_enabled": n.PortSecurity, "subnets": append([]string{}, subnets...), "availability_zone_hints": []string{},
		"availability_zones": []string{"nova"}, "ipv4_address_scope": nil, "ipv6_address_scope": nil, "l2_adjacency": true,
		"dns_domain": "", "is_default": false,
	})
	if t.admin() {
		v["provider:network_type"], v["provider:physical_network"], v["provider:segmentation_id"] = n.NetworkType, nil, n.SegmentationID
		if n.NetworkType == "flat" {
			v["provider:physical_network"], v["provider:segmentation_id"] = "public", nil
		}
	}
	return v
}

func (c *state) network(id string, t *token) (*Network, *apiError) {
	n, ok := c.networks[id]
	if !ok || !c.netVisible(n, t) {
		return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", id)
	}
	return n, nil
}

// networkAttrs are the attributes a network POST or PUT may carry.
func networkAttrs() []string {
	return []string{"name", "admin_state_up", "mtu", "shared", "router:external", "port_security_enabled", "description", "availability_zone_hints", "dns_domain", "provider:network_type", "provider:physical_network", "provider:segmentation_id"}
}

func (c *state) createNetwork(spec map[string]any, t *token) (*Network, *apiError) {
	if e := c.checkAttrs(spec, true, networkAttrs(), nil); e != nil {
		return nil, e
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	for _, a := range []string{"router:external", "shared", "provider:network_type", "provider:physical_network", "provider:segmentation_id"} {
		if _, set := spec[a]; set && !t.admin() {
			return nil, errf(http.StatusForbidden, "HTTPForbidden", "(rule:create_network and rule:create_network:%s) is disallowed by policy", a)
		}
	}
	mtu := intOr(spec, "mtu", maxTenantMTU)
	if mtu > maxTenantMTU && !boolOr(spec, "router:external", false) {
		return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Requested MTU is too big, maximum is %d.", maxTenantMTU)
	}
	if over(c.quota(project).Networks, c.count(project, "networks"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['network'].")
	}
	n := c.addNetwork(project, str(spec, "name"), mtu, boolOr(spec, "router:external", false))
	n.Description, n.Shared = str(spec, "description"), boolOr(spec, "shared", false)
	n.AdminStateUp, n.PortSecurity = boolOr(spec, "admin_state_up", true), boolOr(spec, "port_security_enabled", true)
	n.Tags, _ = strList(spec, "tags")
	return n, nil
}

func (c *state) updateNetwork(n *Network, spec map[string]any, t *token) *apiError {
	if !t.admin() && n.ProjectID != t.project {
		return errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", n.ID)
	}
	if intOr(spec, "mtu", 0) > maxTenantMTU && !n.External {
		return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Requested MTU is too big, maximum is %d.", maxTenantMTU)
	}
	n.Name, n.Description = strOr(spec, "name", n.Name), strOr(spec, "description", n.Description)
	n.MTU, n.AdminStateUp = intOr(spec, "mtu", n.MTU), boolOr(spec, "admin_state_up", n.AdminStateUp)
	n.PortSecurity, n.Shared, n.External = boolOr(spec, "port_security_enabled", n.PortSecurity), boolOr(spec, "shared", n.Shared), boolOr(spec, "router:external", n.External)
	n.touch()
	return nil
}

func (c *state) deleteNetwork(n *Network, t *token) *apiError {
	if !visible(t, n.ProjectID) {
		return errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", n.ID)
	}
	inUse := slices.ContainsFunc(slices.Collect(maps.Values(c.ports)), func(p *Port) bool { return p.NetworkID == n.ID }) ||
		slices.ContainsFunc(slices.Collect(maps.Values(c.fips)), func(f *FloatingIP) bool { return f.FloatingNetworkID == n.ID })
	if inUse {
		return errf(http.StatusConflict, "NetworkInUse", "Unable to complete operation on network %s. There are one or more ports still in use on the network.", n.ID)
	}
	for id, sn := range c.subnets {
		if sn.NetworkID == n.ID {
			delete(c.subnets, id)
		}
	}
	delete(c.networks, n.ID)
	return nil
}

// count counts a project's resources of one Neutron collection.
func (c *state) count(project, collection string) int {
	n := 0
	switch collection {
	case "networks":
		n = countIf(c.networks, func(x *Network) bool { return x.ProjectID == project })
	case "subnets":
		n = countIf(c.subnets, func(x *Subnet) bool { return x.ProjectID == project })
	case "ports":
		n = countIf(c.ports, func(x *Port) bool { return x.ProjectID == project })
	case "routers":
		n = countIf(c.routers, func(x *Router) bool { return x.ProjectID == project })
	case "floatingips":
		n = countIf(c.fips, func(x *FloatingIP) bool { return x.ProjectID == project })
	case "security_groups":
		n = countIf(c.sgs, func(x *SecurityGroup) bool { return x.ProjectID == project })
	case "security_group_rules":
		n = countIf(c.rules, func(x *SecurityGroupRule) bool { return x.ProjectID == project })
	}
	return n
}

func countIf[T any](m map[string]*T, f func(*T) bool) int {
	n := 0
	for _, v := range m {
		if f(v) {
			n++
		}
	}
	return n
}

// defaultPools are the usable addresses of prefix minus the gateway.
func defaultPools(prefix netip.Prefix, gateway string) []Pool {
	first, last := addrAdd(prefix.Addr(), 1), lastAddr(prefix).Prev()
	gw, err := netip.ParseAddr(gateway)
	if err != nil || !prefix.Contains(gw) {
		return []Pool{{first.String(), last.String()}}
	}
	var pools []Pool
	if gw.Compare(first) > 0 {
		pools = append(pools, Pool{first.String(), gw.Prev().String()})
	}
	if gw.Compare(last) < 0 {
		pools = append(pools, Pool{gw.Next().String(), last.String()})
	}
	return pools
}

func poolBounds(prefix netip.Prefix) (netip.Addr, netip.Addr) {
	return addrAdd(prefix.Addr(), 2), lastAddr(prefix).Prev()
}

func addrAdd(a netip.Addr, n int) netip.Addr {
	for range n {
		a = a.Next()
	}
	return a
}

// lastAddr is the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
