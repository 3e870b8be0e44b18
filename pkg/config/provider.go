package config

import (
	"regexp"
	"strings"
)

// openstack checks the openstack section and what OpenStack cannot use.
func (v *validator) openstack() {
	if v.required("openstack.url") {
		v.credentialURL("openstack", v.c.OpenStack.URL, v.c.OpenStack.AllowHTTP)
	}
	v.requiredString("openstack.availability_zone", v.c.OpenStack.AvailabilityZone)
	v.requiredString("openstack.external_net", v.c.OpenStack.ExternalNet)
	if v.has("openstack.region") && strings.TrimSpace(v.c.OpenStack.Region) == "" {
		v.errf("openstack.region", "must not be empty")
	}
	if v.has("network.external") {
		v.errf("network.external", "is only supported with proxmox; OpenStack reaches the cluster through floating IPs")
	}
	if v.has("network.cluster.kubeapi_vip") {
		v.errf("network.cluster.kubeapi_vip", "is not used with openstack (the API VIP is a reserved Neutron port); remove it")
	}
	if v.has("network.cluster.vlan") {
		v.errf("network.cluster.vlan", "is only supported with proxmox")
	}
}

// proxmox checks the proxmox section (§2.3 proxmox).
func (v *validator) proxmox() {
	px := v.c.Proxmox
	if v.required("proxmox.url") {
		v.proxmoxURL()
	}
	v.requiredString("proxmox.storage", px.Storage)
	v.requiredString("proxmox.iso_storage", px.ISOStorage)
	if v.has("proxmox.cidata_storage") && strings.TrimSpace(px.CIDataStorage) == "" {
		v.errf("proxmox.cidata_storage", "must not be empty")
	}
	if v.has("proxmox.placement_strategy") && px.PlacementStrategy != "spread" {
		v.errf("proxmox.placement_strategy", "%q is not supported; the only strategy is spread", px.PlacementStrategy)
	}
	v.tlsVerify()
	v.nonEmpty("proxmox.nodes", px.Nodes)
	v.unique("proxmox.nodes", px.Nodes)
	if v.has("proxmox.token_id") {
		id := string(px.TokenID)
		if id != PlaceholderSecret && !regexp.MustCompile(`^[^@!\s]+@[^@!\s]+![^@!\s]+$`).MatchString(id) {
			v.errf("proxmox.token_id", "must look like user@realm!tokenname")
		}
	}
	v.proxmoxNetwork()
}

// proxmoxNetwork checks that the cluster network is exactly one of a
// bridge, a VNet or a managed SDN, and the external network's bridge.
func (v *validator) proxmoxNetwork() {
	net := &v.c.Proxmox.Network
	if !v.required("proxmox.network") || !v.required("proxmox.network.cluster") {
		return
	}
	set := 0
	for _, k := range []string{"bridge", "vnet", "sdn"} {
		if v.present("proxmox.network.cluster." + k) {
			set++
		}
	}
	if set != 1 {
		v.errf("proxmox.network.cluster", "must set exactly one of bridge, vnet, or sdn")
	}
	if v.has("proxmox.network.cluster.bridge") && strings.TrimSpace(net.Cluster.Bridge) == "" {
		v.errf("proxmox.network.cluster.bridge", "must not be empty")
	}
	if v.has("proxmox.network.cluster.vnet") && strings.TrimSpace(net.Cluster.VNet) == "" {
		v.errf("proxmox.network.cluster.vnet", "must not be empty")
	}
	v.proxmoxExternal(net.External)
}

// proxmoxExternal requires proxmox.network.external (its bridge) exactly
// when network.external is set.
func (v *validator) proxmoxExternal(pxExt *ProxmoxExternalNetwork) {
	switch ext := v.has("network.external"); {
	case pxExt != nil && !ext && !v.failed("network.external"):
		v.errf("proxmox.network.external", "requires network.external (cidr, gateway, anchor_cidr)")
	case ext && pxExt == nil:
		v.errf("proxmox.network.external.bridge", "is required when network.external is set")
	case pxExt != nil:
		v.requiredString("proxmox.network.external.bridge", pxExt.Bridge)
	}
}

// proxmoxURL accepts the API origin, with or without /api2/json, and stores
// the origin.
func (v *validator) proxmoxURL() {
	px := v.c.Proxmox
	u, ok := v.credentialURL("proxmox", px.URL, px.AllowHTTP)
	if !ok {
		return
	}
	switch strings.TrimSuffix(u.Path, "/") {
	case "", "/api2/json":
		px.URL = u.Scheme + "://" + u.Host
	default:
		v.errf("proxmox.url", "%q must be the API origin, e.g. https://pve.example.edu:8006", px.URL)
	}
}

// requiredString requires a non-blank string.
func (v *validator) requiredString(path, val string) {
	if v.required(path) && strings.TrimSpace(val) == "" {
		v.errf(path, "must not be empty")
	}
}
