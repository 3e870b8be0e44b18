package config

// OpenStack is the openstack section.
type OpenStack struct {
	// URL is the Keystone v3 endpoint.
	URL string `yaml:"url" jsonschema:"format=uri" jsonschema_description:"Keystone v3 endpoint, e.g. https://openstack.example.edu:5000/v3/."`
	// AllowHTTP accepts an http:// url (the credential then travels in clear).
	AllowHTTP bool `yaml:"allow_http,omitempty" jsonschema_description:"Accept an http:// url: the application credential and tokens then cross the network unencrypted (a loopback lab; default false, http is refused)."`
	// AvailabilityZone is the Nova availability zone (create-only).
	AvailabilityZone string `yaml:"availability_zone" jsonschema_description:"Nova availability zone (create-only)."`
	// ExternalNet is the name of the external (floating IP) network.
	ExternalNet string `yaml:"external_net" jsonschema_description:"Name of the external network for the router and floating IPs."`
	// Region defaults to RegionOne.
	Region string `yaml:"region,omitempty" jsonschema:"default=RegionOne" jsonschema_description:"Region (default RegionOne)."`
	// CredentialID is the application credential id.
	CredentialID Secret `yaml:"credential_id,omitempty" jsonschema_description:"Application credential id (keep it in secrets.yaml)."`
	// CredentialSecret is the application credential secret.
	CredentialSecret Secret `yaml:"credential_secret,omitempty" jsonschema_description:"Application credential secret (keep it in secrets.yaml)."`
}

// Proxmox is the proxmox section.
type Proxmox struct {
	// URL is the API origin (https://host:8006), without /api2/json.
	URL string `yaml:"url" jsonschema:"format=uri" jsonschema_description:"API origin, e.g. https://pve.example.edu:8006 (/api2/json is accepted and added internally)."`
	// AllowHTTP accepts an http:// url (the token then travels in clear).
	AllowHTTP bool `yaml:"allow_http,omitempty" jsonschema_description:"Accept an http:// url: the API token then crosses the network unencrypted (a loopback lab; default false, http is refused)."`
	// Storage holds VM disks (images content).
	Storage string `yaml:"storage" jsonschema_description:"Storage for VM disks (images content)."`
	// ISOStorage holds the boot ISO (iso content).
	ISOStorage string `yaml:"iso_storage" jsonschema_description:"Storage for the boot ISO (iso content), visible on every compute node."`
	// CIDataStorage holds per-VM NoCloud ISOs; defaults to local.
	CIDataStorage string `yaml:"cidata_storage,omitempty" jsonschema:"default=local" jsonschema_description:"Node-local storage (iso content) for the per-VM cidata ISO (default local)."`
	// PlacementStrategy is always spread.
	PlacementStrategy string `yaml:"placement_strategy,omitempty" jsonschema:"enum=spread,default=spread" jsonschema_description:"VM placement (only spread)."`
	// Nodes restricts the compute nodes; empty means every online node.
	Nodes []string `yaml:"nodes,omitempty" jsonschema_description:"Compute nodes; omit to use every online node that reaches all storages."`
	// TLSVerify says how the API certificate is checked (default: verify).
	TLSVerify TLSVerify `yaml:"tls_verify,omitempty" jsonschema_description:"true (default), false, or a CA-bundle path."`
	// Network selects the cluster and external bridges.
	Network ProxmoxNetwork `yaml:"network" jsonschema_description:"Bridges: network.cluster (exactly one of bridge, vnet, sdn) and optional network.external.bridge."`
	// TokenID is the API token id, user@realm!tokenname.
	TokenID Secret `yaml:"token_id,omitempty" jsonschema:"pattern=^[^@!]+@[^@!]+![^@!]+$" jsonschema_description:"API token id user@realm!tokenname (keep it in secrets.yaml)."`
	// TokenSecret is the API token secret.
	TokenSecret Secret `yaml:"token_secret,omitempty" jsonschema_description:"API token secret (keep it in secrets.yaml)."`
}

// ProxmoxNetwork is proxmox.network.
type ProxmoxNetwork struct {
	// Cluster is the bridge carrying network.cluster.
	Cluster ProxmoxClusterNetwork `yaml:"cluster" jsonschema_description:"Exactly one of bridge, vnet or sdn."`
	// External is set when VMs get a second NIC on network.external.
	External *ProxmoxExternalNetwork `yaml:"external,omitempty" jsonschema_description:"Bridge of the routed external network (required iff network.external is set)."`
}

// ProxmoxClusterNetwork is proxmox.network.cluster: exactly one field is set.
type ProxmoxClusterNetwork struct {
	// Bridge is an existing Linux bridge.
	Bridge string `yaml:"bridge,omitempty" jsonschema_description:"Existing Linux bridge (DHCP-backed)."`
	// VNet is an existing SDN VNet.
	VNet string `yaml:"vnet,omitempty" jsonschema_description:"Existing SDN VNet (DHCP-backed)."`
	// SDN is a managed EVPN zone; non-nil when present (even as {}).
	SDN *SDN `yaml:"sdn,omitempty" jsonschema_description:"Managed EVPN zone and VNet (may be {}); nodes get static addresses."`
}

// ProxmoxExternalNetwork is proxmox.network.external.
type ProxmoxExternalNetwork struct {
	// Bridge carries network.external.
	Bridge string `yaml:"bridge" jsonschema_description:"Linux bridge of the routed external network."`
}

// SDN is proxmox.network.cluster.sdn, a managed EVPN zone. After loading
// every field holds its effective value (defaults applied); ExitNodes and
// PrimaryExitNode stay empty when they default to every cluster node.
type SDN struct {
	// Name is the zone and VNet id; defaults to the cluster name.
	Name string `yaml:"name,omitempty" jsonschema:"pattern=^[a-zA-Z][a-zA-Z0-9]{1\\,7}$" jsonschema_description:"Zone and VNet id: 2-8 letters/digits, letter first (default: the cluster name)."`
	// Zone is the zone type; only evpn.
	Zone string `yaml:"zone,omitempty" jsonschema:"enum=evpn,default=evpn" jsonschema_description:"Zone type (only evpn)."`
	// Controller is the EVPN controller id; defaults to evpnctl.
	Controller string `yaml:"controller,omitempty" jsonschema:"default=evpnctl" jsonschema_description:"EVPN controller id, created when missing (default evpnctl)."`
	// ASN is the BGP AS number; defaults to 65000.
	ASN int64 `yaml:"asn,omitempty" jsonschema:"minimum=0,maximum=4294967295,default=65000" jsonschema_description:"BGP AS number (default 65000)."`
	// VRFTag is the zone's VRF VXLAN id; see DefaultVRFTag.
	VRFTag int `yaml:"vrf_tag,omitempty" jsonschema:"minimum=1,maximum=16777215" jsonschema_description:"VRF VXLAN id (default 10000 + 2*(sha256(name) mod 8000000))."`
	// Tag is the VNet's VXLAN id; defaults to VRFTag+1.
	Tag int `yaml:"tag,omitempty" jsonschema:"minimum=1,maximum=16777215" jsonschema_description:"VNet VXLAN id (default vrf_tag + 1)."`
	// ExitNodes are the zone's exit nodes.
	ExitNodes []string `yaml:"exit_nodes,omitempty" jsonschema_description:"Exit nodes, members of sdn.nodes (default sdn.nodes, else proxmox.nodes, else every node)."`
	// PrimaryExitNode is the preferred exit node; defaults to the first.
	PrimaryExitNode string `yaml:"primary_exit_node,omitempty" jsonschema_description:"Primary exit node (default: the first exit node)."`
	// MTU is the zone MTU; 0 leaves it unset.
	MTU int `yaml:"mtu,omitempty" jsonschema:"minimum=1" jsonschema_description:"Zone MTU, at least network.cluster.mtu (default unset)."`
	// Nodes restricts the zone to these nodes; empty means all.
	Nodes []string `yaml:"nodes,omitempty" jsonschema_description:"Nodes of the zone; must include every proxmox.nodes entry (default all)."`
}

// TLSVerify is proxmox.tls_verify: true (the zero value), false, or a
// CA-bundle path.
type TLSVerify struct {
	// Insecure is true for tls_verify: false.
	Insecure bool
	// CABundle is the CA-bundle path given as tls_verify, as written.
	CABundle string
}
