package openstack

import (
	"crypto/rand"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

func portAttrs() []string {
	return []string{
		"name", "network_id", "admin_state_up", "mac_address", "fixed_ips", "device_id", "device_owner", "security_groups",
		"allowed_address_pairs", "port_security_enabled", "description", "binding:host_id", "binding:vnic_type", "binding:profile",
		"extra_dhcp_opts", "dns_name", "qos_policy_id", "propagate_uplink_status",
	}
}

// ports is the port kind.
func ports() resource[Port, *Port] {
	return resource[Port, *Port]{
		kind: "port", path: "ports",
		items: func(c *state) map[string]*Port { return c.ports },
		find:  (*state).port, view: (*state).portView,
		create: (*state).createPort, update: (*state).updatePort,
		attrs:    slices.DeleteFunc(portAttrs(), func(a string) bool { return a == "network_id" || a == "mac_address" }),
		readOnly: []string{"network_id", "mac_address"},
		remove:   (*state).deletePort,
	}
}

func (c *state) port(id string, t *token) (*Port, *apiError) {
	p, ok := c.ports[id]
	if !ok || !visible(t, p.ProjectID) {
		return nil, errf(http.StatusNotFound, "PortNotFound", "Port %s could not be found.", id)
	}
	return p, nil
}

func (c *state) portView(p *Port, t *token) map[string]any {
	v := baseView(p.ID, p.Name, p.ProjectID, p.Description, p.Tags, p.meta)
	pairs := make([]AddressPair, 0, len(p.AllowedAddressPairs))
	pairs = append(pairs, p.AllowedAddressPairs...)
	maps.Copy(v, map[string]any{
		"network_id": p.NetworkID, "mac_address": p.MACAddress, "admin_state_up": p.AdminStateUp, "status": p.Status,
		"device_id": p.DeviceID, "device_owner": p.DeviceOwner, "fixed_ips": append([]FixedIP{}, p.FixedIPs...),
		"allowed_address_pairs": pairs, "extra_dhcp_opts": []any{}, "security_groups": append([]string{}, p.SecurityGroups...),
		"binding:vnic_type": "normal", "port_security_enabled": p.PortSecurity, "dns_name": "", "dns_assignment": []any{},
		"ip_allocation": "immediate", "propagate_uplink_status": false, "resource_request": nil,
	})
	if t.admin() {
		vif := "unbound"
		if p.BindingHost != "" {
			vif = "ovs"
		}
		v["binding:host_id"], v["binding:profile"], v["binding:vif_details"], v["binding:vif_type"] = p.BindingHost, map[string]any{}, map[string]any{}, vif
	}
	return v
}

func newMAC() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", b[0], b[1], b[2])
}

func (c *state) createPort(spec map[string]any, t *token) (*Port, *apiError) {
	if e := c.checkAttrs(spec, true, portAttrs(), nil); e != nil {
		return nil, e
	}
	return c.newPort(spec, t)
}

// newPort validates a port POST and stores the port; callers hold the lock.
func (c *state) newPort(spec map[string]any, t *token) (*Port, *apiError) {
	n, e := c.network(str(spec, "network_id"), t)
	if e != nil {
		return nil, e
	}
	project, e := ownerOf(spec, t)
	if e != nil {
		return nil, e
	}
	if over(c.quota(project).Ports, c.count(project, "ports"), 1) {
		return nil, errf(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['port'].")
	}
	p := &Port{
		ID: newUUID(), ProjectID: project, NetworkID: n.ID, Name: str(spec, "name"), Description: str(spec, "description"),
		AdminStateUp: boolOr(spec, "admin_state_up", true), DeviceID: str(spec, "device_id"), DeviceOwner: str(spec, "device_owner"),
		PortSecurity: boolOr(spec, "port_security_enabled", n.PortSecurity), Status: "DOWN", MACAddress: strings.ToLower(str(spec, "mac_address")),
	}
	p.Tags, _ = strList(spec, "tags")
	if t.admin() {
		p.BindingHost = str(spec, "binding:host_id")
	}
	if p.MACAddress == "" {
		p.MACAddress = newMAC()
	} else if _, err := net.ParseMAC(p.MACAddress); err != nil {
		return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for mac_address. Reason: '%s' is not a valid MAC address.", p.MACAddress)
	}
	for _, other := range c.ports {
		if other.NetworkID == n.ID && other.MACAddress == p.MACAddress {
			return nil, errf(http.StatusConflict, "MacAddressInUse", "Unable to complete operation for network %s. The mac address %s is in use.", n.ID, p.MACAddress)
		}
	}
	if e := c.applyPortSpec(p, spec, true); e != nil {
		return nil, e
	}
	if _, set := spec["security_groups"]; !set && p.PortSecurity && !strings.HasPrefix(p.DeviceOwner, "network:") {
		p.SecurityGroups = []string{c.defaultSG(project).ID}
	}
	p.meta = c.newMeta()
	c.ports[p.ID] = p
	return p, nil
}

// applyPortSpec validates and applies fixed IPs, security groups, address
// pairs and port security (create or update); p is unchanged on error.
func (c *state) applyPortSpec(p *Port, spec map[string]any, create bool) *apiError {
	next := *p
	if raw, set := spec["fixed_ips"]; set || create {
		ips, e := c.fixedIPs(p, raw, set)
		if e != nil {
			return e
		}
		next.FixedIPs = ips
	}
	if _, set := spec["security_groups"]; set {
		ids, ok := strList(spec, "security_groups")
		if !ok {
			return errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for security_groups.")
		}
		for _, id := range ids {
			if g, ok := c.sgs[id]; !ok || g.ProjectID != p.ProjectID {
				return errf(http.StatusNotFound, "SecurityGroupNotFound", "Security group %s does not exist", id)
			}
		}
		next.SecurityGroups = slices.Compact(slices.Clone(ids))
	}
	if raw, set := spec["allowed_address_pairs"]; set {
		pairs, e := addressPairs(raw, p.MACAddress)
		if e != nil {
			return e
		}
		next.AllowedAddressPairs = pairs
	}
	next.PortSecurity = boolOr(spec, "port_security_enabled", p.PortSecurity)
	if !next.PortSecurity && len(next.SecurityGroups) > 0 {
		if create {
			return errf(http.StatusBadRequest, "PortSecurityAndIPRequiredForSecurityGroups", "Port security must be enabled and port must have an IP address in order to use security groups.")
		}
		return errf(http.StatusConflict, "PortSecurityPortHasSecurityGroup", "Port has security group associated. Cannot disable port security or ip address until security group is removed")
	}
	if !next.PortSecurity && len(next.AllowedAddressPairs) > 0 {
		return errf(http.StatusConflict, "AddressPairAndPortSecurityRequired", "Port Security must be enabled in order to have allowed address pairs on a port.")
	}
	*p = next
	return nil
}

// fixedIPs resolves a fixed_ips request (absent: one address from the
// network's first subnet).
func (c *state) fixedIPs(p *Port, raw any, set bool) ([]FixedIP, *apiError) {
	var subnets []*Subnet
	for _, sn := range sortedValues(c.subnets, func(s *Subnet) int64 { return s.seq }) {
		if sn.NetworkID == p.NetworkID {
			subnets = append(subnets, sn)
		}
	}
	if !set {
		if len(subnets) == 0 {
			return []FixedIP{}, nil
		}
		ip, e := c.allocIP(subnets[0])
		return []FixedIP{{SubnetID: subnets[0].ID, IPAddress: ip}}, e
	}
	list, ok := raw.([]any)
	if !ok && raw != nil {
		return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for fixed_ips. Reason: Invalid data format for fixed IP specification.")
	}
	out := []FixedIP{}
	for _, item := range list {
		spec, _ := item.(map[string]any)
		sn, e := c.subnetFor(subnets, str(spec, "subnet_id"), str(spec, "ip_address"), p.NetworkID)
		if e != nil {
			return nil, e
		}
		ip := str(spec, "ip_address")
		if ip == "" {
			if ip, e = c.allocIP(sn); e != nil {
				return nil, e
			}
		} else if e := c.claimIP(sn, ip, p.ID); e != nil {
			return nil, e
		}
		if slices.ContainsFunc(out, func(f FixedIP) bool { return f.IPAddress == ip }) {
			return nil, errf(http.StatusConflict, "IpAddressAlreadyAllocated", "IP address %s already allocated in subnet %s", ip, sn.ID)
		}
		out = append(out, FixedIP{SubnetID: sn.ID, IPAddress: ip})
	}
	return out, nil
}

func (c *state) subnetFor(subnets []*Subnet, subnetID, ip, network string) (*Subnet, *apiError) {
	for _, sn := range subnets {
		if sn.ID == subnetID {
			return sn, nil
		}
		if a, err := netip.ParseAddr(ip); subnetID == "" && err == nil && netip.MustParsePrefix(sn.CIDR).Contains(a) {
			return sn, nil
		}
	}
	if subnetID != "" {
		if _, ok := c.subnets[subnetID]; ok {
			return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Failed to create port on network %s, because fixed_ips included invalid subnet %s.", network, subnetID)
		}
		return nil, errf(http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", subnetID)
	}
	return nil, errf(http.StatusBadRequest, "InvalidIpForNetwork", "IP address %s is not a valid IP for any of the subnets on the specified network.", ip)
}

func addressPairs(raw any, mac string) ([]AddressPair, *apiError) {
	list, ok := raw.([]any)
	if !ok && raw != nil {
		return nil, errf(http.StatusBadRequest, "AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address")
	}
	out := []AddressPair{}
	for _, item := range list {
		spec, _ := item.(map[string]any)
		ip := str(spec, "ip_address")
		if ip == "" {
			return nil, errf(http.StatusBadRequest, "AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address")
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			if _, err := netip.ParsePrefix(ip); err != nil {
				return nil, errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: '%s' is not a valid IP address.", ip)
			}
		}
		pm := strings.ToLower(str(spec, "mac_address"))
		if pm == "" {
			pm = mac
		}
		pair := AddressPair{IPAddress: ip, MACAddress: pm}
		if slices.Contains(out, pair) {
			return nil, errf(http.StatusBadRequest, "DuplicateAddressPairInRequest", "Request contains duplicate address pair: mac_address %s ip_address %s.", pm, ip)
		}
		out = append(out, pair)
	}
	return out, nil
}

func (c *state) updatePort(p *Port, spec map[string]any, t *token) *apiError {
	if e := c.applyPortSpec(p, spec, false); e != nil {
		return e
	}
	p.Name, p.Description = strOr(spec, "name", p.Name), strOr(spec, "description", p.Description)
	p.DeviceID, p.DeviceOwner = strOr(spec, "device_id", p.DeviceID), strOr(spec, "device_owner", p.DeviceOwner)
	p.AdminStateUp = boolOr(spec, "admin_state_up", p.AdminStateUp)
	if t.admin() {
		p.BindingHost = strOr(spec, "binding:host_id", p.BindingHost)
	}
	p.touch()
	return nil
}

func (c *state) deletePort(p *Port, _ *token) *apiError {
	if strings.HasPrefix(p.DeviceOwner, "network:router_") {
		return errf(http.StatusConflict, "ServicePortInUse", "Port %s cannot be deleted directly via the port API: has device owner %s.", p.ID, p.DeviceOwner)
	}
	c.removePort(p)
	return nil
}

// removePort deletes a port, detaching it from its server and floating
// IPs; callers hold the lock.
func (c *state) removePort(p *Port) {
	for _, f := range c.fips {
		if f.PortID == p.ID {
			c.disassociate(f)
		}
	}
	if srv, ok := c.servers[p.DeviceID]; ok {
		srv.Ports = slices.DeleteFunc(srv.Ports, func(id string) bool { return id == p.ID })
	}
	delete(c.ports, p.ID)
}
