package openstack

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// floatingIPs is the floating IP kind.
func floatingIPs() resource[FloatingIP, *FloatingIP] {
	return resource[FloatingIP, *FloatingIP]{
		kind: "floatingip", path: "floatingips",
		items:  func(c *state) map[string]*FloatingIP { return c.fips },
		find:   (*state).fip,
		view:   func(c *state, f *FloatingIP, _ *token) map[string]any { return c.fipView(f) },
		create: (*state).createFIP, update: (*state).updateFIP,
		attrs:    []string{"port_id", "fixed_ip_address", "description", "qos_policy_id"},
		readOnly: []string{"floating_network_id", "floating_ip_address", "subnet_id"},
		remove:   (*state).deleteFIP,
	}
}

func (c *state) fip(id string, t *token) (*FloatingIP, *apiError) {
	f, ok := c.fips[id]
	if !ok || !visible(t, f.ProjectID) {
		return nil, errf(http.StatusNotFound, "FloatingIPNotFound", "Floating IP %s could not be found", id)
	}
	return f, nil
}

func (c *state) fipView(f *FloatingIP) map[string]any {
	v := baseView(f.ID, "\x00", f.ProjectID, f.Description, f.Tags, f.meta)
	var port, fixed, router any
	if f.PortID != "" {
		port, fixed, router = f.PortID, f.FixedIPAddress, f.RouterID
	}
	var details any
	if p, ok := c.ports[f.PortID]; ok {
		details = map[string]any{
			"name": p.Name, "network_id": p.NetworkID, "mac_address": p.MACAddress, "admin_state_up": p.AdminStateUp,
			"status": p.Status, "device_id": p.DeviceID, "device_owner": p.DeviceOwner,
		}
	}
	maps.Copy(v, map[string]any{
		"floating_ip_address": f.FloatingIPAddress, "floating_network_id": f.FloatingNetworkID, "port_id": port,
		"fixed_ip_address": fixed, "router_id": router, "status": f.Status, "port_details": details,
		"dns_domain": "", "dns_name": "", "port_forwardings": []any{}, "qos_policy_id": nil,
	})
	return v
}

func fipAttrs() []string {
	return []string{"floating_network_id", "floating_ip_address", "subnet_id", "port_id", "fixed_ip_address", "description", "dns_domain", "dns_name", "qos_policy_id"}
}

func (c *state) createFIP(spec map[string]any, t *token) (*FloatingIP, *apiError) {
	if e := c.checkAttrs(spec, true, fipAttrs(), nil); e != nil {
		return nil, e
	}
	f, e := c.newFIP(spec, t)
	if e != nil {
		return nil, e
	}
	if str(spec, "port_id") != "" {
		if e := c.associate(f, str(spec, "port_id"), str(spec, "fixed_ip_address"), t); e != nil {
			delete(c.fips, f.ID)
			return nil, e
		}
	}
	return f, nil
}

// newFIP allocates and stores a floating IP; callers hold the lock.
func (c *state) newFIP(spec map[string]any, t *token) (*FloatingIP, *apiError) {
	netID := str(spec, "floating_network_id")
	n, ok := c.networks[netID]
	if !ok {
		return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", netID)
	}
	if !n.External {
		return nil, errf(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Network %s is not a valid external network.", netID)
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	if over(c.quota(project).FloatingIPs, c.count(project, "floatingips"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['floatingip'].")
	}
	var sn *Subnet
	for _, x := range sortedValues(c.subnets, func(s *Subnet) int64 { return s.seq }) {
		if x.NetworkID == n.ID && (sn == nil || x.ID == str(spec, "subnet_id")) {
			sn = x
		}
	}
	if sn == nil {
		return nil, errf(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Network %s does not contain any IPv4 subnet.", n.ID)
	}
	ip := str(spec, "floating_ip_address")
	if ip == "" {
		if ip, e = c.allocIP(sn); e != nil {
			return nil, e
		}
	} else if e := c.claimIP(sn, ip, ""); e != nil {
		return nil, e
	}
	f := &FloatingIP{
		meta: c.newMeta(), ID: newUUID(), ProjectID: project, Description: str(spec, "description"),
		FloatingNetworkID: n.ID, FloatingIPAddress: ip, Status: "DOWN",
	}
	f.Tags, _ = strList(spec, "tags")
	c.fips[f.ID] = f
	return f, nil
}

// associate points f at a port; callers hold the lock.
func (c *state) associate(f *FloatingIP, portID, fixedIP string, t *token) *apiError {
	p, e := c.port(portID, t)
	if e != nil {
		return e
	}
	var ips []FixedIP
	for _, x := range p.FixedIPs {
		if netip.MustParseAddr(x.IPAddress).Is4() && (fixedIP == "" || x.IPAddress == fixedIP) {
			ips = append(ips, x)
		}
	}
	switch {
	case len(ips) == 0 && fixedIP != "":
		return errf(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Port %s does not have fixed ip %s.", p.ID, fixedIP)
	case len(ips) == 0:
		return errf(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Port %s does not have any IPv4 address.", p.ID)
	case len(ips) > 1:
		return errf(http.StatusBadRequest, "BadRequest", "Bad floatingip request: Port %s has multiple fixed IPv4 addresses.  Must provide a specific IPv4 address when assigning a floating IP.", p.ID)
	}
	for _, other := range c.fips {
		if other.ID != f.ID && other.PortID == p.ID && other.FixedIPAddress == ips[0].IPAddress && other.FloatingNetworkID == f.FloatingNetworkID {
			return errf(http.StatusConflict, "FloatingIPPortAlreadyAssociated", "Cannot associate floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on external network %s.",
				f.FloatingIPAddress, f.ID, p.ID, ips[0].IPAddress, f.FloatingNetworkID)
		}
	}
	rt := c.routerFor(ips[0].SubnetID, f.FloatingNetworkID)
	if rt == nil {
		return errf(http.StatusNotFound, "ExternalGatewayForFloatingIPNotFound", "External network %s is not reachable from subnet %s.  Therefore, cannot associate Port %s with a Floating IP.",
			f.FloatingNetworkID, ips[0].SubnetID, p.ID)
	}
	if f.PortID != "" && f.PortID != p.ID {
		c.disassociate(f)
	}
	f.PortID, f.FixedIPAddress, f.RouterID, f.Status = p.ID, ips[0].IPAddress, rt.ID, "ACTIVE"
	f.touch()
	c.emit(Event{Kind: FloatingIPAssociated, FloatingIP: f.clone()})
	return nil
}

// disassociate clears f's port; callers hold the lock.
func (c *state) disassociate(f *FloatingIP) {
	if f.PortID == "" {
		return
	}
	old := f.clone()
	f.PortID, f.FixedIPAddress, f.RouterID, f.Status = "", "", "", "DOWN"
	f.touch()
	c.emit(Event{Kind: FloatingIPReleased, FloatingIP: old})
}

func (c *state) updateFIP(f *FloatingIP, spec map[string]any, t *token) *apiError {
	if raw, set := spec["port_id"]; set {
		if portID, _ := raw.(string); portID != "" {
			if e := c.associate(f, portID, str(spec, "fixed_ip_address"), t); e != nil {
				return e
			}
		} else {
			c.disassociate(f)
		}
	}
	if d, ok := spec["description"].(string); ok {
		f.Description = d
		f.touch()
	}
	return nil
}

func (c *state) deleteFIP(f *FloatingIP, _ *token) *apiError {
	c.disassociate(f)
	delete(c.fips, f.ID)
	return nil
}

// fipsOf lists the floating IPs pointing at a port.
func (c *state) fipsOf(portID string) []*FloatingIP {
	var out []*FloatingIP
	for _, f := range sortedValues(c.fips, func(x *FloatingIP) int64 { return x.seq }) {
		if f.PortID == portID {
			out = append(out, f)
		}
	}
	return slices.Clip(out)
}
