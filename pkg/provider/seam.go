package provider

import (
	"context"
	"io"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
)

// The provider seam: what the image, net and nodes phases ask of a cloud.
// Every method that can mutate takes a *Plan and mutates only through
// Plan.Do, so a dry run (plan) observes the cloud and records the same
// changes without making them. Every call is bounded by the provider's
// per-request timeout; errors name the operation and the resource.
//
// Repeating a request. An answer can be lost after the request was applied
// (a proxy's 502 or 504, a reset connection, a timeout), so a request is
// repeated blindly only when repeating it cannot duplicate anything:
//
//   - GET, HEAD, OPTIONS, PUT and DELETE are idempotent: RetryTransport
//     repeats them on any transient failure;
//   - POST and PATCH are repeated by the transport only when they provably
//     did not reach the service (no connection, or a 503, which the
//     services and their load balancers send before acting), or when they
//     are idempotent by nature: Keystone's token POST (a second token is
//     harmless) and the Image Factory's schematic POST (content-addressed:
//     the same body names the same schematic);
//   - every other create whose outcome is unknown (OutcomeUnknown) is
//     settled by the provider: it looks the resource up by its
//     deterministic name and the ownership marker the create itself
//     carried, adopts what it finds (finishing its ownership tags) and
//     creates it again only when nothing is there. On OpenStack the
//     marker is the description of Neutron resources (Neutron before Zed
//     refuses tags in POST; a floating IP has no name, so its description
//     is its name and marker at once), the tags of a Nova server (sent in
//     its POST), and the tags and talos_* properties of the Glance image;
//     a security group rule, which has neither, is found by its content
//     in the cluster's own group. The Proxmox provider documents its own.
//
// A late create. A real service keeps working on a request after its
// client gave up: nova-api, neutron-server or pveproxy with every worker
// busy, a Proxmox task queue, Rancher. The resource then appears seconds
// after the lost answer, so "not found" right after it is no evidence.
// The settle looks again (AwaitLate) for LateWindow(the request timeout):
// the service had the request at most one attempt ago and finishes it
// within a bound of the same order. Only an empty answer after that window
// lets the create be sent again. The rule per call:
//
//   - Neutron network, subnet, router, port, security group, floating IP:
//     by name and description marker, in the credential's project; one is
//     in use when a port is bound to it (a port: to a device, or it holds
//     a floating IP, or another port lets its address through, as machine
//     ports do a VIP's; a floating IP: associated with a port; DHCP and
//     gateway ports do not count) or, for a network, a subnet is on it;
//   - Neutron security group rule: by content, in the cluster's own group
//     (Neutron refuses a second identical rule: no duplicate);
//   - router interface: by the router's ports on the subnet (PUT, repeated;
//     Neutron refuses a second one on the subnet);
//   - Nova server: by name and tags (the record exists once nova-api's
//     handler commits, before its 202); the one in use is the one the
//     machine's port is bound to (a port is bound to one server at most;
//     nova-compute binds it while building, so the port is read until it
//     is bound or the window has passed); across runs, one still building
//     is in use too, and when none holds a port (an ACTIVE server whose
//     port a failed twin's cleanup unbound has no network) every copy is
//     deleted and the machine created again;
//   - Cinder volume: made by Nova with its server, deleted with it;
//   - Glance image: by name, talos_* properties and the project, queued
//     (empty) ones only: none is in use, the first is kept;
//   - Proxmox VM, disk, pool, SDN object, cidata upload: by id or volid,
//     after the running tasks that could have made it have ended;
//   - Rancher cluster and bindings, Kubernetes objects of the plugins: by
//     name and talosc's marker.
//
// A duplicate that appears all the same (the late create and the second
// one) is resolved by DedupeOwned: the unused one is deleted through the
// plan and the run says so; two in use are refused, named. A resource
// whose use cannot be read counts as in use. On OpenStack every create
// goes through one settle path (openstack.settle), which resolves the
// duplicates its look finds. No window bounds a busy service (a real
// nova-api under load applied creates well past it): a copy that appears
// after the run has moved on is found by the next run's reads (the
// network reads, the machine inventory), which keep the one in use by the
// same rule and delete the others through its plan.
//
// A resource is recognisable as talosc's from the moment it exists, so a
// run killed between a create and its tagging leaves nothing the next run
// cannot adopt; a same-named resource without the marker is still refused.

// ImageSpec is the shared boot image a cluster boots new machines from.
type ImageSpec struct {
	// Name is the image name (factory.BootImageName).
	Name string
	// TalosVersion and SchematicID identify the image (recorded as image
	// properties on OpenStack).
	TalosVersion string
	SchematicID  string
	// Artifact is the Image Factory artifact (factory.BootArtifact), e.g.
	// "openstack-amd64.raw.xz".
	Artifact string
	// URL is the artifact's Image Factory URL, for providers that download
	// it themselves (Proxmox download-url).
	URL string
	// Fetch streams the artifact as served (still compressed) into dst; a
	// truncated download is an error. Providers that upload call it.
	Fetch func(ctx context.Context, dst io.Writer) (int64, error)
}

// Image is the result of ensuring or finding the boot image.
type Image struct {
	// ID is the provider's id (Glance image id; Proxmox volid).
	ID string `json:"id"`
	// Name is the image name.
	Name string `json:"name"`
	// Status is the provider's status ("active").
	Status string `json:"status,omitempty"`
}

// Images keeps the shared boot image.
type Images interface {
	// EnsureImage finds the image by name, or creates it (through plan).
	// In a dry run a missing image is returned with an empty ID.
	EnsureImage(ctx context.Context, spec ImageSpec, plan *Plan) (Image, error)
	// FindImage finds the image by name; ok is false when it is missing.
	FindImage(ctx context.Context, spec ImageSpec) (img Image, ok bool, err error)
}

// MachineNet is one desired machine as the network phase sees it.
type MachineNet struct {
	Hostname string
	Role     string // config.RoleControlPlane or config.RoleWorker
	Pool     string
}

// NetworkSpec is what the network phase reconciles, for the cluster the
// Cloud was bound to at Connect.
type NetworkSpec struct {
	// Machines are every desired machine, control planes first.
	Machines []MachineNet
}

// Endpoint is one service address: the fixed VIP inside the cluster
// network and the address clients use (OpenStack: the floating IP).
type Endpoint struct {
	VIP        netip.Addr `json:"vip,omitzero"`
	Advertised string     `json:"advertised,omitempty"`
	// Reserved names the provider resource holding the VIP (port id).
	Reserved string `json:"reserved,omitempty"`
}

// MachineAddress is one machine's network attachment.
type MachineAddress struct {
	Hostname string     `json:"hostname"`
	Address  netip.Addr `json:"address,omitzero"`
	// Attachment is the provider resource (OpenStack port id; Proxmox NIC).
	Attachment string `json:"attachment,omitempty"`
}

// NetworkResult is what the network phase hands to the nodes phase.
type NetworkResult struct {
	Kubernetes Endpoint `json:"kubernetes"`
	Ingress    Endpoint `json:"ingress"`
	// Network and Subnet are the provider ids of the cluster network.
	Network string `json:"network,omitempty"`
	Subnet  string `json:"subnet,omitempty"`
	// SecurityGroup is the cluster security group id.
	SecurityGroup string `json:"securityGroup,omitempty"`
	// Machines are the desired machines' attachments, in desired order.
	Machines []MachineAddress `json:"machines,omitempty"`
	// Project is the OpenStack project the network lives in (the
	// application credential's, which only Keystone names); empty
	// elsewhere.
	Project string `json:"project,omitempty"`
}

// Networks keeps the cluster network, security and endpoints.
type Networks interface {
	// ReconcileNetwork makes the network match spec (through plan): adds
	// before deletes, adopts nothing without the ownership markers, and
	// reclaims attachments of undesired machines that have no server.
	ReconcileNetwork(ctx context.Context, spec NetworkSpec, plan *Plan) (*NetworkResult, error)
	// CurrentNetwork reads the network without changing anything; missing
	// pieces are zero values.
	CurrentNetwork(ctx context.Context, spec NetworkSpec) (*NetworkResult, error)
	// DestroyNetwork removes every owned network resource (through plan).
	DestroyNetwork(ctx context.Context, plan *Plan) error
	// ValidateTeardown refuses, before any machine is deleted, a destroy
	// the network part could not finish (Proxmox: other administrators'
	// pending SDN changes, a shared controller with pending changes). It
	// changes nothing.
	ValidateTeardown(ctx context.Context) error
}

// Machine is one owned machine found in the provider inventory.
type Machine struct {
	Hostname string `json:"hostname"`
	// ID is the provider id (Nova server id; Proxmox VMID).
	ID     string `json:"id"`
	Role   string `json:"role,omitempty"`
	Pool   string `json:"pool,omitempty"`
	Status string `json:"status,omitempty"`
	// Address is the machine's cluster address when known.
	Address netip.Addr `json:"address,omitzero"`
	// Flavor, DiskGB and Zone are what the machine was created with,
	// compared against the desired pool by ValidateMachines: on OpenStack
	// the flavor, boot volume size and availability zone; on Proxmox the
	// disk and, in Zone, the node the VM runs on.
	Flavor string `json:"flavor,omitempty"`
	DiskGB int    `json:"diskGB,omitempty"`
	Zone   string `json:"zone,omitempty"`
	// Kind is the change kind of the machine itself (Cloud.MachineKind).
	Kind string `json:"kind,omitempty"`
	// Stopped is the provider reporting the machine powered off (Proxmox
	// status "stopped", OpenStack SHUTOFF).
	Stopped bool `json:"stopped,omitempty"`
}

// Inventory is every owned machine of one cluster.
type Inventory struct {
	Machines []Machine `json:"machines"`
}

// Hostnames returns the owned machines' hostnames, in inventory order.
func (inv *Inventory) Hostnames() []string {
	out := make([]string, len(inv.Machines))
	for i, m := range inv.Machines {
		out[i] = m.Hostname
	}
	return out
}

// Find returns the owned machine with hostname.
func (inv *Inventory) Find(hostname string) (Machine, bool) {
	for _, m := range inv.Machines {
		if m.Hostname == hostname {
			return m, true
		}
	}
	return Machine{}, false
}

// MachineSpec is one machine to create.
type MachineSpec struct {
	Machine config.Machine
	// Config is the machine's Talos configuration (user data).
	Config []byte
	// Image is the boot image.
	Image Image
	// Attachment is the machine's network attachment from the network phase.
	Attachment MachineAddress
}

// Compute keeps the cluster's machines.
type Compute interface {
	// Inventory lists the cluster's owned machines (found by ownership
	// markers, never by name alone).
	Inventory(ctx context.Context) (*Inventory, error)
	// ValidateMachines refuses changes the provider cannot make in place
	// to existing machines and the network they sit on (OpenStack:
	// flavor, disk, availability zone, the cluster subnet's cidr),
	// naming the key and the way out. The whole-run validation calls it
	// before the first mutation. It mutates nothing.
	ValidateMachines(ctx context.Context, desired []config.Machine, inv *Inventory) error
	// CreateMachines creates the missing machines concurrently (through
	// plan) and returns them as created.
	CreateMachines(ctx context.Context, specs []MachineSpec, plan *Plan) ([]Machine, error)
	// ReconcileMachines brings existing owned machines in line with what
	// the provider manages in place (Proxmox: the per-VM firewall, the
	// sizing of cores, memory and disk growth, stopped VMs started),
	// through plan; it never recreates one. On both it deletes the unused
	// second machines of a name the inventory found (a create applied
	// late).
	ReconcileMachines(ctx context.Context, inv *Inventory, plan *Plan) error
	// PendingRestart lists the owned machines (hostnames, in inventory
	// order) whose sizing changes take effect only at the next provider
	// restart (Proxmox: cores/memory pending in the VM config, a disk
	// grown since the last restart, or a planned change of either).
	// OpenStack has none. It mutates nothing.
	PendingRestart(ctx context.Context, inv *Inventory) ([]string, error)
	// RestartMachine restarts machine through the provider so that pending
	// sizing applies (Proxmox: the reboot API, an ACPI shutdown and a
	// start, not a guest reboot), through plan, and waits for the restart
	// task. OpenStack does not support it.
	RestartMachine(ctx context.Context, machine Machine, plan *Plan) error
	// FinalizeMachines runs once the cluster is healthy (Proxmox: detach
	// and delete the per-VM cidata ISOs), through plan.
	FinalizeMachines(ctx context.Context, inv *Inventory, plan *Plan) error
	// DeleteMachine deletes one owned machine (scale-down) and what is its
	// own: OpenStack the server, its port and its boot volume; Proxmox the
	// VM with its disks and firewall, and its cidata ISO. It re-reads the
	// ownership markers first and refuses a machine it cannot prove owned
	// (a stale inventory entry must not delete someone else's resource),
	// records one change, and waits until everything is gone (through
	// plan). What is already gone is no error and, if nothing is left, no
	// change, so a run whose answer was lost can be repeated.
	DeleteMachine(ctx context.Context, machine Machine, plan *Plan) error
	// DestroyMachines deletes every owned machine and waits until they are
	// gone (through plan).
	DestroyMachines(ctx context.Context, inv *Inventory, plan *Plan) error
}

// Status is what the provider reports for status: its endpoint (never a
// credential) and what it owns, by kind.
type Status struct {
	// Summary is the provider line: "openstack: <url> (region r, project p)".
	Summary string `json:"summary"`
	// Details are provider facts (url, region, project).
	Details map[string]string `json:"details,omitempty"`
	// Resources counts owned resources by kind ("servers": 5).
	Resources map[string]int `json:"resources,omitempty"`
}

// Cloud is a whole provider: every phase's part plus status.
type Cloud interface {
	Images
	Networks
	Compute
	// Status reports the provider and its owned resources.
	Status(ctx context.Context) (*Status, error)
	// Project is the credential's project name (OpenStack), "" if none;
	// it becomes the ncsa/project node label.
	Project() string
	// MachineKind is the change kind of the provider's machines
	// ("openstack:server", "proxmox:vm"): every Machine's Kind, and the
	// Kind of every change that creates or deletes one.
	MachineKind() string
}
