package openstack

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// maxTenantMTU is the MTU of VXLAN tenant networks on a 1500-byte underlay.
const maxTenantMTU = 1450

func (s *Cloud) networkRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v2.0/networks", s.authed(s.listNetworks))
	mux.HandleFunc("POST /v2.0/networks", s.authed(s.createNetwork))
	mux.HandleFunc("GET /v2.0/networks/{id}", s.authed(s.neutronShow("network")))
	mux.HandleFunc("PUT /v2.0/networks/{id}", s.authed(s.updateNetwork))
	mux.HandleFunc("DELETE /v2.0/networks/{id}", s.authed(s.deleteNetwork))
	mux.HandleFunc("GET /v2.0/subnets", s.authed(s.listSubnets))
	mux.HandleFunc("POST /v2.0/subnets", s.authed(s.createSubnet))
	mux.HandleFunc("GET /v2.0/subnets/{id}", s.authed(s.neutronShow("subnet")))
	mux.HandleFunc("PUT /v2.0/subnets/{id}", s.authed(s.updateSubnet))
	mux.HandleFunc("DELETE /v2.0/subnets/{id}", s.authed(s.deleteSubnet))
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

// neutronShow answers GET /v2.0/<kind>s/{id}.
func (s *Cloud) neutronShow(kind string) func(http.ResponseWriter, *http.Request, *token) {
	return func(w http.ResponseWriter, r *http.Request, t *token) {
		c := s.st
		c.mu.Lock()
		defer c.mu.Unlock()
		v, err := c.neutronView(kind, r.PathValue("id"), t)
		if err != nil {
			neutronError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{kind: v})
	}
}

// neutronView returns the view of one visible resource; callers hold the lock.
func (c *state) neutronView(kind, id string, t *token) (map[string]any, *apiError) {
	switch kind {
	case "network":
		n, err := c.network(id, t)
		if err != nil {
			return nil, err
		}
		return c.netView(n, t), nil
	case "subnet":
		sn, err := c.subnet(id, t)
		if err != nil {
			return nil, err
		}
		return subnetView(sn), nil
	case "port":
		p, err := c.port(id, t)
		if err != nil {
			return nil, err
		}
		return c.portView(p, t), nil
	case "router":
		rt, err := c.router(id, t)
		if err != nil {
			return nil, err
		}
		return c.routerView(rt, t), nil
	case "floatingip":
		f, err := c.fip(id, t)
		if err != nil {
			return nil, err
		}
		return c.fipView(f), nil
	case "security_group":
		g, err := c.sg(id, t)
		if err != nil {
			return nil, err
		}
		return c.sgView(g), nil
	default:
		rule, err := c.rule(id, t)
		if err != nil {
			return nil, err
		}
		return ruleView(rule), nil
	}
}

func (c *state) network(id string, t *token) (*Network, *apiError) {
	n, ok := c.networks[id]
	if !ok || !c.netVisible(n, t) {
		return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", id)
	}
	return n, nil
}

func (s *Cloud) listNetworks(w http.ResponseWriter, r *http.Request, t *token) {
	c := s.st
	c.mu.Lock()
	var views []map[string]any
	for _, n := range sortedValues(c.networks, func(n *Network) int64 { return n.seq }) {
		if c.netVisible(n, t) {
			views = append(views, c.netView(n, t))
		}
	}
	attrs := keys(c.netView(&Network{}, t))
	c.mu.Unlock()
	s.respondList(w, r, "networks", attrs, views)
}

// networkAttrs are the attributes a network POST or PUT may carry.
func networkAttrs() []string {
	return []string{"name", "admin_state_up", "mtu", "shared", "router:external", "port_security_enabled", "description", "availability_zone_hints", "dns_domain", "provider:network_type", "provider:physical_network", "provider:segmentation_id"}
}

func (s *Cloud) createNetwork(w http.ResponseWriter, r *http.Request, t *token) {
	spec, ok := neutronBody(w, r, "network")
	if !ok {
		return
	}
	if e := s.checkAttrs(spec, true, networkAttrs(), nil); e != nil {
		neutronError(w, e)
		return
	}
	project, e := ownerOf(spec, t)
	for _, a := range []string{"router:external", "shared", "provider:network_type", "provider:physical_network", "provider:segmentation_id"} {
		if _, set := spec[a]; set && e == nil && !t.admin() {
			e = errf(http.StatusForbidden, "HTTPForbidden", "(rule:create_network and rule:create_network:%s) is disallowed by policy", a)
		}
	}
	mtu := intOr(spec, "mtu", maxTenantMTU)
	if e == nil && mtu > maxTenantMTU && !boolOr(spec, "router:external", false) {
		e = errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Requested MTU is too big, maximum is %d.", maxTenantMTU)
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil && over(c.quota(project).Networks, c.count(project, "networks"), 1) {
		e = errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['network'].")
	}
	if e != nil {
		neutronError(w, e)
		return
	}
	n := c.addNetwork(project, str(spec, "name"), mtu, boolOr(spec, "router:external", false))
	n.Description, n.Shared = str(spec, "description"), boolOr(spec, "shared", false)
	n.AdminStateUp, n.PortSecurity = boolOr(spec, "admin_state_up", true), boolOr(spec, "port_security_enabled", true)
	n.Tags, _ = strList(spec, "tags")
	writeJSON(w, http.StatusCreated, map[string]any{"network": c.netView(n, t)})
}

func (s *Cloud) updateNetwork(w http.ResponseWriter, r *http.Request, t *token) {
	spec, ok := neutronBody(w, r, "network")
	if !ok {
		return
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	n, e := c.network(r.PathValue("id"), t)
	if e == nil {
		e = ifMatch(r, n.meta)
	}
	if e == nil {
		e = s.checkAttrs(spec, false, networkAttrs(), nil)
	}
	if e == nil && !t.admin() && n.ProjectID != t.project {
		e = errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", n.ID)
	}
	if e == nil && intOr(spec, "mtu", 0) > maxTenantMTU && !n.External {
		e = errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Requested MTU is too big, maximum is %d.", maxTenantMTU)
	}
	if e != nil {
		neutronError(w, e)
		return
	}
	n.Name, n.Description = strOr(spec, "name", n.Name), strOr(spec, "description", n.Description)
	n.MTU, n.AdminStateUp = intOr(spec, "mtu", n.MTU), boolOr(spec, "admin_state_up", n.AdminStateUp)
	n.PortSecurity, n.Shared, n.External = boolOr(spec, "port_security_enabled", n.PortSecurity), boolOr(spec, "shared", n.Shared), boolOr(spec, "router:external", n.External)
	n.touch()
	writeJSON(w, http.StatusOK, map[string]any{"network": c.netView(n, t)})
}

func (s *Cloud) deleteNetwork(w http.ResponseWriter, r *http.Request, t *token) {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	n, e := c.network(r.PathValue("id"), t)
	if e == nil && !visible(t, n.ProjectID) {
		e = errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", n.ID)
	}
	if e == nil {
		inUse := slices.ContainsFunc(slices.Collect(maps.Values(c.ports)), func(p *Port) bool { return p.NetworkID == n.ID }) ||
			slices.ContainsFunc(slices.Collect(maps.Values(c.fips)), func(f *FloatingIP) bool { return f.FloatingNetworkID == n.ID })
		if inUse {
			e = errf(http.StatusConflict, "NetworkInUse", "Unable to complete operation on network %s. There are one or more ports still in use on the network.", n.ID)
		}
	}
	if e != nil {
		neutronError(w, e)
		return
	}
	for id, sn := range c.subnets {
		if sn.NetworkID == n.ID {
			delete(c.subnets, id)
		}
	}
	delete(c.networks, n.ID)
	w.WriteHeader(http.StatusNoContent)
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
