package openstack

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// subnets is the subnet kind.
func subnets() resource[Subnet, *Subnet] {
	return resource[Subnet, *Subnet]{
		kind: "subnet", path: "subnets",
		items:  func(c *state) map[string]*Subnet { return c.subnets },
		find:   (*state).subnet,
		view:   func(_ *state, sn *Subnet, _ *token) map[string]any { return subnetView(sn) },
		create: (*state).createSubnet, update: (*state).updateSubnet,
		attrs:    []string{"name", "description", "gateway_ip", "allocation_pools", "dns_nameservers", "host_routes", "enable_dhcp", "service_types"},
		readOnly: []string{"network_id", "cidr", "ip_version"},
		remove:   (*state).deleteSubnet,
	}
}

func subnetAttrs() []string {
	return []string{"name", "network_id", "ip_version", "cidr", "gateway_ip", "allocation_pools", "dns_nameservers", "host_routes", "enable_dhcp", "description", "service_types", "subnetpool_id", "ipv6_ra_mode", "ipv6_address_mode"}
}

// addSubnet stores sn with defaults; callers hold the lock.
func (c *state) addSubnet(sn *Subnet) {
	sn.meta, sn.ID = c.newMeta(), newUUID()
	if sn.DNSNameservers == nil {
		sn.DNSNameservers = []string{}
	}
	c.subnets[sn.ID] = sn
}

func subnetView(sn *Subnet) map[string]any {
	v := baseView(sn.ID, sn.Name, sn.ProjectID, sn.Description, sn.Tags, sn.meta)
	var gw any
	if sn.GatewayIP != "" {
		gw = sn.GatewayIP
	}
	maps.Copy(v, map[string]any{
		"network_id": sn.NetworkID, "ip_version": 4, "cidr": sn.CIDR, "gateway_ip": gw, "allocation_pools": slices.Clone(sn.Pools),
		"dns_nameservers": slices.Clone(sn.DNSNameservers), "host_routes": []any{}, "enable_dhcp": sn.EnableDHCP,
		"ipv6_ra_mode": nil, "ipv6_address_mode": nil, "subnetpool_id": nil, "service_types": []string{},
	})
	return v
}

func (c *state) subnet(id string, t *token) (*Subnet, *apiError) {
	sn, ok := c.subnets[id]
	if ok {
		if n := c.networks[sn.NetworkID]; visible(t, sn.ProjectID) || (n != nil && (n.Shared || n.External)) {
			return sn, nil
		}
	}
	return nil, errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", id)
}

func (c *state) createSubnet(spec map[string]any, t *token) (*Subnet, *apiError) {
	sn, e := c.newSubnet(spec, t)
	if e != nil {
		return nil, e
	}
	if e := c.checkAttrs(spec, true, subnetAttrs(), nil); e != nil {
		return nil, e
	}
	if over(c.quota(sn.ProjectID).Subnets, c.count(sn.ProjectID, "subnets"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['subnet'].")
	}
	c.addSubnet(sn)
	return sn, nil
}

// newSubnet validates a subnet POST; callers hold the lock.
func (c *state) newSubnet(spec map[string]any, t *token) (*Subnet, *apiError) {
	n, e := c.network(str(spec, "network_id"), t)
	if e != nil {
		return nil, e
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	if n.ProjectID != project && !t.admin() && !n.Shared {
		return nil, errf(http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", n.ID)
	}
	if v := intOr(spec, "ip_version", 4); v != 4 {
		return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: the lab simulates IPv4 subnets only (ip_version %d).", v)
	}
	prefix, err := netip.ParsePrefix(str(spec, "cidr"))
	if err != nil || !prefix.Addr().Is4() {
		return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for cidr. Reason: '%v' is not a valid IP subnet.", spec["cidr"])
	}
	if prefix.Masked() != prefix {
		return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for cidr. Reason: '%s' isn't a recommended CIDR, '%s' is recommended.", prefix, prefix.Masked())
	}
	for _, other := range c.subnets {
		if o, _ := netip.ParsePrefix(other.CIDR); other.NetworkID == n.ID && o.Overlaps(prefix) {
			return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", prefix, n.ID)
		}
	}
	sn := &Subnet{
		ProjectID: project, Name: str(spec, "name"), Description: str(spec, "description"), NetworkID: n.ID,
		CIDR: prefix.String(), EnableDHCP: boolOr(spec, "enable_dhcp", true),
	}
	sn.Tags, _ = strList(spec, "tags")
	sn.GatewayIP = addrAdd(prefix.Addr(), 1).String()
	if v, set := spec["gateway_ip"]; set {
		sn.GatewayIP, _ = v.(string)
	}
	if e := c.applySubnetSpec(sn, spec, prefix); e != nil {
		return nil, e
	}
	return sn, nil
}

// applySubnetSpec validates and applies gateway, pools and DNS servers.
func (c *state) applySubnetSpec(sn *Subnet, spec map[string]any, prefix netip.Prefix) *apiError {
	if sn.GatewayIP != "" {
		gw, err := netip.ParseAddr(sn.GatewayIP)
		if err != nil || !prefix.Contains(gw) {
			return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Gateway is not valid on subnet.")
		}
	}
	if raw, set := spec["allocation_pools"].([]any); set {
		sn.Pools = nil
		for _, p := range raw {
			po, _ := p.(map[string]any)
			a, err1 := netip.ParseAddr(str(po, "start"))
			b, err2 := netip.ParseAddr(str(po, "end"))
			if err1 != nil || err2 != nil || !prefix.Contains(a) || !prefix.Contains(b) || b.Less(a) {
				return errf(http.StatusBadRequest, "InvalidAllocationPool", "The allocation pool %s-%s spanning the subnet is invalid.", str(po, "start"), str(po, "end"))
			}
			if gw, err := netip.ParseAddr(sn.GatewayIP); err == nil && !gw.Less(a) && !b.Less(gw) {
				return errf(http.StatusConflict, "GatewayConflictWithAllocationPools", "Gateway ip %s conflicts with allocation pool %s-%s.", gw, a, b)
			}
			sn.Pools = append(sn.Pools, Pool{a.String(), b.String()})
		}
	} else if sn.Pools == nil {
		sn.Pools = defaultPools(prefix, sn.GatewayIP)
	}
	if dns, ok := strList(spec, "dns_nameservers"); !ok {
		return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for dns_nameservers.")
	} else if _, set := spec["dns_nameservers"]; set {
		for i, d := range dns {
			if _, err := netip.ParseAddr(d); err != nil {
				return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for dns_nameservers. Reason: '%s' is not a valid nameserver.", d)
			}
			if slices.Contains(dns[:i], d) {
				return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for dns_nameservers. Reason: Duplicate nameserver '%s'.", d)
			}
		}
		sn.DNSNameservers = append([]string{}, dns...)
	}
	return nil
}

func (c *state) updateSubnet(sn *Subnet, spec map[string]any, t *token) *apiError {
	if !visible(t, sn.ProjectID) {
		return errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", sn.ID)
	}
	updated := *sn
	if v, set := spec["gateway_ip"]; set {
		updated.GatewayIP, _ = v.(string)
	}
	if e := c.applySubnetSpec(&updated, spec, netip.MustParsePrefix(sn.CIDR)); e != nil {
		return e
	}
	updated.Name, updated.Description = strOr(spec, "name", sn.Name), strOr(spec, "description", sn.Description)
	updated.EnableDHCP = boolOr(spec, "enable_dhcp", sn.EnableDHCP)
	*sn = updated
	sn.touch()
	return nil
}

func (c *state) deleteSubnet(sn *Subnet, t *token) *apiError {
	if !visible(t, sn.ProjectID) {
		return errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", sn.ID)
	}
	if len(c.usedIPs(sn.ID)) > 0 {
		return errf(http.StatusConflict, "SubnetInUse", "Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", sn.ID)
	}
	delete(c.subnets, sn.ID)
	return nil
}

// usedIPs maps the allocated addresses of a subnet to their holder.
func (c *state) usedIPs(subnetID string) map[string]string {
	used := map[string]string{}
	for _, p := range c.ports {
		for _, f := range p.FixedIPs {
			if f.SubnetID == subnetID {
				used[f.IPAddress] = p.ID
			}
		}
	}
	sn := c.subnets[subnetID]
	for _, f := range c.fips {
		if sn != nil && f.FloatingNetworkID == sn.NetworkID {
			used[f.FloatingIPAddress] = f.ID
		}
	}
	return used
}

// allocIP picks the lowest free address of a subnet's pools.
func (c *state) allocIP(sn *Subnet) (string, *apiError) {
	used := c.usedIPs(sn.ID)
	for _, p := range sn.Pools {
		a, b := netip.MustParseAddr(p.Start), netip.MustParseAddr(p.End)
		for ip := a; !b.Less(ip); ip = ip.Next() {
			if _, taken := used[ip.String()]; !taken && ip.String() != sn.GatewayIP {
				return ip.String(), nil
			}
		}
	}
	return "", errf(http.StatusConflict, "IpAddressGenerationFailure", "No more IP addresses available on network %s.", sn.NetworkID)
}

// claimIP checks that ip is a free address of sn.
func (c *state) claimIP(sn *Subnet, ip, self string) *apiError {
	a, err := netip.ParseAddr(ip)
	if err != nil || !netip.MustParsePrefix(sn.CIDR).Contains(a) {
		return errf(http.StatusBadRequest, "InvalidIpForSubnet", "IP address %s is not a valid IP for the specified subnet.", ip)
	}
	if holder, taken := c.usedIPs(sn.ID)[a.String()]; taken && holder != self {
		return errf(http.StatusConflict, "IpAddressAlreadyAllocated", "IP address %s already allocated in subnet %s", ip, sn.ID)
	}
	return nil
}
