package openstack

import (
	"maps"
	"net/http"
	"slices"
)

const (
	ownerRouterInterface = "network:router_interface"
	ownerRouterGateway   = "network:router_gateway"
)

// routers is the router kind.
func routers() resource[Router, *Router] {
	return resource[Router, *Router]{
		kind: "router", path: "routers",
		items: func(c *state) map[string]*Router { return c.routers },
		find:  (*state).router, view: (*state).routerView,
		create: (*state).createRouter, update: (*state).updateRouter, attrs: routerAttrs(),
		remove: (*state).deleteRouter,
	}
}

func (c *state) router(id string, t *token) (*Router, *apiError) {
	rt, ok := c.routers[id]
	if !ok || !visible(t, rt.ProjectID) {
		return nil, errf(http.StatusNotFound, "RouterNotFound", "Router %s could not be found", id)
	}
	return rt, nil
}

func (c *state) routerView(rt *Router, t *token) map[string]any {
	v := baseView(rt.ID, rt.Name, rt.ProjectID, rt.Description, rt.Tags, rt.meta)
	var gw any
	if rt.Gateway != nil {
		ips := []FixedIP{}
		if p, ok := c.ports[rt.Gateway.PortID]; ok {
			ips = append(ips, p.FixedIPs...)
		}
		gw = map[string]any{"network_id": rt.Gateway.NetworkID, "enable_snat": rt.Gateway.EnableSNAT, "external_fixed_ips": ips}
	}
	maps.Copy(v, map[string]any{
		"admin_state_up": rt.AdminStateUp, "status": "ACTIVE", "external_gateway_info": gw, "routes": []any{},
		"availability_zone_hints": []string{}, "availability_zones": []string{"nova"}, "flavor_id": nil,
	})
	if t.admin() {
		v["distributed"], v["ha"] = false, false
	}
	return v
}

func routerAttrs() []string {
	return []string{"name", "admin_state_up", "external_gateway_info", "description", "availability_zone_hints", "distributed", "ha", "flavor_id", "routes"}
}

func (c *state) createRouter(spec map[string]any, t *token) (*Router, *apiError) {
	if e := c.checkAttrs(spec, true, routerAttrs(), nil); e != nil {
		return nil, e
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	if over(c.quota(project).Routers, c.count(project, "routers"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['router'].")
	}
	rt := &Router{ID: newUUID(), ProjectID: project, Name: str(spec, "name"), Description: str(spec, "description"), AdminStateUp: boolOr(spec, "admin_state_up", true)}
	rt.Tags, _ = strList(spec, "tags")
	if e := c.setGateway(rt, spec, t); e != nil {
		return nil, e
	}
	rt.meta = c.newMeta()
	c.routers[rt.ID] = rt
	return rt, nil
}

// setGateway applies external_gateway_info (absent: unchanged; null or {}:
// cleared); callers hold the lock.
func (c *state) setGateway(rt *Router, spec map[string]any, t *token) *apiError {
	raw, set := spec["external_gateway_info"]
	if !set {
		return nil
	}
	info, _ := raw.(map[string]any)
	netID := str(info, "network_id")
	if rt.Gateway != nil && rt.Gateway.NetworkID == netID {
		rt.Gateway.EnableSNAT = boolOr(info, "enable_snat", rt.Gateway.EnableSNAT)
		return nil
	}
	if netID == "" {
		if rt.Gateway != nil && slices.ContainsFunc(slices.Collect(maps.Values(c.fips)), func(f *FloatingIP) bool { return f.RouterID == rt.ID }) {
			return errf(http.StatusConflict, "RouterExternalGatewayInUseByFloatingIp", "Gateway cannot be updated for router %s, since a gateway to external network %s is required by one or more floating IPs.", rt.ID, rt.Gateway.NetworkID)
		}
		c.clearGateway(rt)
		return nil
	}
	n, ok := c.networks[netID]
	if !ok {
		return errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", netID)
	}
	if !n.External {
		return errf(http.StatusBadRequest, "BadRequest", "Bad router request: Network %s is not an external network.", netID)
	}
	if _, set := info["enable_snat"]; set && !t.admin() {
		return errf(http.StatusForbidden, "PolicyNotAuthorized", "(rule:create_router and rule:create_router:external_gateway_info:enable_snat) is disallowed by policy")
	}
	var sn *Subnet
	for _, x := range sortedValues(c.subnets, func(s *Subnet) int64 { return s.seq }) {
		if x.NetworkID == n.ID && sn == nil {
			sn = x
		}
	}
	gp := &Port{
		meta: c.newMeta(), ID: newUUID(), NetworkID: n.ID, MACAddress: newMAC(), DeviceID: rt.ID, DeviceOwner: ownerRouterGateway,
		Status: "ACTIVE", AdminStateUp: true, FixedIPs: []FixedIP{},
	}
	if sn != nil {
		ip, e := c.allocIP(sn)
		if e != nil {
			return e
		}
		gp.FixedIPs = append(gp.FixedIPs, FixedIP{SubnetID: sn.ID, IPAddress: ip})
	}
	c.clearGateway(rt)
	c.ports[gp.ID] = gp
	rt.Gateway = &RouterGateway{NetworkID: n.ID, EnableSNAT: boolOr(info, "enable_snat", true), PortID: gp.ID}
	return nil
}

func (c *state) clearGateway(rt *Router) {
	if rt.Gateway != nil {
		delete(c.ports, rt.Gateway.PortID)
		rt.Gateway = nil
	}
}

func (c *state) updateRouter(rt *Router, spec map[string]any, t *token) *apiError {
	if e := c.setGateway(rt, spec, t); e != nil {
		return e
	}
	rt.Name, rt.Description = strOr(spec, "name", rt.Name), strOr(spec, "description", rt.Description)
	rt.AdminStateUp = boolOr(spec, "admin_state_up", rt.AdminStateUp)
	rt.touch()
	return nil
}

func (c *state) deleteRouter(rt *Router, _ *token) *apiError {
	if slices.ContainsFunc(slices.Collect(maps.Values(c.ports)), func(p *Port) bool { return p.DeviceID == rt.ID && p.DeviceOwner == ownerRouterInterface }) {
		return errf(http.StatusConflict, "RouterInUse", "Router %s still has ports", rt.ID)
	}
	c.clearGateway(rt)
	delete(c.routers, rt.ID)
	return nil
}

// routerInterface serves PUT /v2.0/routers/{id}/{add,remove}_router_interface.
func routerInterface(add bool) handler {
	return func(cl *call) (any, error) {
		spec, err := readJSON(cl.r)
		if err != nil {
			return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "%s", err)
		}
		c := cl.s.st
		c.mu.Lock()
		defer c.mu.Unlock()
		rt, e := c.router(cl.r.PathValue("id"), cl.t)
		if e != nil {
			return nil, e
		}
		var p *Port
		if add {
			p, e = c.addInterface(rt, str(spec, "subnet_id"), str(spec, "port_id"), cl.t)
		} else {
			p, e = c.removeInterface(rt, str(spec, "subnet_id"), str(spec, "port_id"))
		}
		if e != nil {
			return nil, e
		}
		var subnets []string
		for _, f := range p.FixedIPs {
			subnets = append(subnets, f.SubnetID)
		}
		rt.touch()
		return map[string]any{
			"id": rt.ID, "tenant_id": rt.ProjectID, "project_id": rt.ProjectID, "port_id": p.ID, "network_id": p.NetworkID,
			"subnet_id": firstOr(subnets, ""), "subnet_ids": subnets, "tags": []string{},
		}, nil
	}
}

func (c *state) addInterface(rt *Router, subnetID, portID string, t *token) (*Port, *apiError) {
	if (subnetID == "") == (portID == "") {
		return nil, errf(http.StatusBadRequest, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.")
	}
	if portID != "" {
		p, e := c.port(portID, t)
		if e != nil {
			return nil, e
		}
		if p.DeviceID != "" {
			return nil, errf(http.StatusConflict, "PortInUse", "Unable to complete operation on port %s for network %s. Port already has an attached device %s.", p.ID, p.NetworkID, p.DeviceID)
		}
		p.DeviceID, p.DeviceOwner = rt.ID, ownerRouterInterface
		return p, nil
	}
	sn, e := c.subnet(subnetID, t)
	if e != nil {
		return nil, e
	}
	if sn.GatewayIP == "" {
		return nil, errf(http.StatusBadRequest, "BadRequest", "Bad router request: Subnet %s does not have a gateway IP.", sn.ID)
	}
	for _, p := range c.ports {
		if p.DeviceID == rt.ID && p.DeviceOwner == ownerRouterInterface && slices.ContainsFunc(p.FixedIPs, func(f FixedIP) bool { return f.SubnetID == sn.ID }) {
			return nil, errf(http.StatusBadRequest, "BadRequest", "Bad router request: Router already has a port on subnet %s.", sn.ID)
		}
	}
	if e := c.claimIP(sn, sn.GatewayIP, ""); e != nil {
		return nil, e
	}
	p := &Port{
		meta: c.newMeta(), ID: newUUID(), ProjectID: rt.ProjectID, NetworkID: sn.NetworkID, MACAddress: newMAC(), DeviceID: rt.ID,
		DeviceOwner: ownerRouterInterface, Status: "DOWN", AdminStateUp: true, FixedIPs: []FixedIP{{SubnetID: sn.ID, IPAddress: sn.GatewayIP}},
	}
	c.ports[p.ID] = p
	return p, nil
}

func (c *state) removeInterface(rt *Router, subnetID, portID string) (*Port, *apiError) {
	for _, p := range sortedValues(c.ports, func(p *Port) int64 { return p.seq }) {
		if p.DeviceID != rt.ID || p.DeviceOwner != ownerRouterInterface {
			continue
		}
		if p.ID == portID || (portID == "" && slices.ContainsFunc(p.FixedIPs, func(f FixedIP) bool { return f.SubnetID == subnetID })) {
			for _, f := range c.fips {
				if f.RouterID == rt.ID && c.portOnSubnets(f.PortID, p.FixedIPs) {
					return nil, errf(http.StatusConflict, "RouterInterfaceInUseByFloatingIP", "Router interface for subnet %s on router %s cannot be deleted, as it is required by one or more floating IPs.", p.FixedIPs[0].SubnetID, rt.ID)
				}
			}
			delete(c.ports, p.ID)
			return p, nil
		}
	}
	if portID != "" {
		return nil, errf(http.StatusNotFound, "RouterInterfaceNotFound", "Router %s does not have an interface with id %s", rt.ID, portID)
	}
	return nil, errf(http.StatusNotFound, "RouterInterfaceNotFoundForSubnet", "Router %s has no interface on subnet %s", rt.ID, subnetID)
}

// portOnSubnets reports whether port has an address on one of ips' subnets.
func (c *state) portOnSubnets(portID string, ips []FixedIP) bool {
	p, ok := c.ports[portID]
	return ok && slices.ContainsFunc(p.FixedIPs, func(f FixedIP) bool {
		return slices.ContainsFunc(ips, func(g FixedIP) bool { return g.SubnetID == f.SubnetID })
	})
}

// routerFor finds the router that makes subnet reach external network ext.
func (c *state) routerFor(subnetID, ext string) *Router {
	for _, p := range sortedValues(c.ports, func(p *Port) int64 { return p.seq }) {
		rt, ok := c.routers[p.DeviceID]
		if ok && p.DeviceOwner == ownerRouterInterface && rt.Gateway != nil && rt.Gateway.NetworkID == ext &&
			slices.ContainsFunc(p.FixedIPs, func(f FixedIP) bool { return f.SubnetID == subnetID }) {
			return rt
		}
	}
	return nil
}

func firstOr[T any](s []T, def T) T {
	if len(s) == 0 {
		return def
	}
	return s[0]
}
