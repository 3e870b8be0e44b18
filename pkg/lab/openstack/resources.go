package openstack

import (
	"maps"
	"slices"
	"time"
)

// Server is a Nova server.
type Server struct {
	meta
	ID, Name, ProjectID, UserID string
	FlavorID                    string
	ImageID                     string // "" when booted from a volume
	Zone                        string
	Status                      string // BUILD, ACTIVE, ERROR, DELETED
	VMState                     string
	TaskState                   string
	UserData                    string // base64, as sent
	ConfigDrive                 bool
	Metadata                    map[string]string
	Tags                        []string
	Ports                       []string // port ids, in NIC order
	Volumes                     []AttachedVolume
	Launched                    time.Time
	Fault                       string
	// ownPorts are ports Nova created for "networks: [{uuid}]" (deleted
	// with the server).
	ownPorts []string
}

// AttachedVolume is a volume attached to a server.
type AttachedVolume struct {
	ID                  string
	DeleteOnTermination bool
}

// Network is a Neutron network.
type Network struct {
	meta
	ID, Name, ProjectID, Description string
	Tags                             []string
	MTU                              int
	External, Shared                 bool
	AdminStateUp, PortSecurity       bool
	NetworkType                      string
	SegmentationID                   int
}

// Pool is an allocation pool of a subnet.
type Pool struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Subnet is a Neutron subnet (IPv4 only).
type Subnet struct {
	meta
	ID, Name, ProjectID, Description string
	Tags                             []string
	NetworkID, CIDR, GatewayIP       string
	DNSNameservers                   []string
	Pools                            []Pool
	EnableDHCP                       bool
}

// FixedIP is one address of a port.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// AddressPair is an allowed address pair of a port.
type AddressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address"`
}

// Port is a Neutron port.
type Port struct {
	meta
	ID, Name, ProjectID, Description string
	Tags                             []string
	NetworkID, MACAddress            string
	FixedIPs                         []FixedIP
	AllowedAddressPairs              []AddressPair
	SecurityGroups                   []string
	PortSecurity, AdminStateUp       bool
	DeviceID, DeviceOwner, Status    string
	BindingHost                      string
}

// RouterGateway is a router's external gateway.
type RouterGateway struct {
	NetworkID  string
	EnableSNAT bool
	PortID     string
}

// Router is a Neutron router; its interfaces are its ports with device
// owner network:router_interface.
type Router struct {
	meta
	ID, Name, ProjectID, Description string
	Tags                             []string
	AdminStateUp                     bool
	Gateway                          *RouterGateway
}

// FloatingIP is a Neutron floating IP.
type FloatingIP struct {
	meta
	ID, ProjectID, Description           string
	Tags                                 []string
	FloatingNetworkID, FloatingIPAddress string
	PortID, FixedIPAddress, RouterID     string
	Status                               string
}

// SecurityGroup is a Neutron security group.
type SecurityGroup struct {
	meta
	ID, Name, Description, ProjectID string
	Tags                             []string
	Stateful                         bool
}

// SecurityGroupRule is a Neutron security group rule; Protocol "" is any,
// port bounds nil are unset.
type SecurityGroupRule struct {
	meta
	ID, SecurityGroupID, ProjectID string
	Direction, EtherType, Protocol string
	PortRangeMin, PortRangeMax     *int
	RemoteIPPrefix, RemoteGroupID  string
	Description                    string
}

// Image is a Glance image; its data is hashed, not kept.
type Image struct {
	meta
	ID, Name, Owner, Status       string
	DiskFormat, ContainerFormat   string
	Visibility                    string
	Protected                     bool
	Tags                          []string
	Properties                    map[string]string
	MinDisk, MinRAM               int
	Size                          int64
	Checksum, HashAlgo, HashValue string
	staged                        bool
}

// Volume is a Cinder volume.
type Volume struct {
	meta
	ID, Name, ProjectID, Description string
	UserID                           string
	Status                           string
	Size                             int // GiB
	ImageID                          string
	ServerID, Device                 string
	Bootable                         bool
	Zone, VolumeType                 string
	Metadata                         map[string]string
}

func (s *Server) clone() *Server {
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	c.Tags = slices.Clone(s.Tags)
	c.Ports = slices.Clone(s.Ports)
	c.Volumes = slices.Clone(s.Volumes)
	c.ownPorts = slices.Clone(s.ownPorts)
	return &c
}

func (p *Port) clone() *Port {
	c := *p
	c.Tags = slices.Clone(p.Tags)
	c.FixedIPs = slices.Clone(p.FixedIPs)
	c.AllowedAddressPairs = slices.Clone(p.AllowedAddressPairs)
	c.SecurityGroups = slices.Clone(p.SecurityGroups)
	return &c
}

func (f *FloatingIP) clone() *FloatingIP {
	c := *f
	c.Tags = slices.Clone(f.Tags)
	return &c
}
