package proxmox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
)

// minRelease is the oldest Proxmox VE major release talosc drives: VM NICs
// are created without mtu= so they inherit the bridge MTU (reference §5.3).
const minRelease = 9

// Environment is what Preflight found: the compute nodes and the storages
// the cluster uses. Preflight refuses a datacenter firewall that is off, so
// an Environment always comes from a cluster whose firewall is on.
type Environment struct {
	// Version is the pve-manager version ("9.1.1").
	Version string
	// Nodes are the compute nodes, sorted by name: proxmox.nodes, or every
	// online node that reaches all required storages.
	Nodes []Node
	// Storage, ISOStorage and CIDataStorage are proxmox.storage,
	// proxmox.iso_storage and proxmox.cidata_storage.
	Storage, ISOStorage, CIDataStorage Storage
	// VNetZone is the SDN zone of proxmox.network.cluster.vnet; "" for a
	// bridge, or when the VNet does not exist (ReconcileNetwork refuses it).
	VNetZone string
}

// Node is one compute node.
type Node struct {
	Name   string
	Online bool
	// FreeMemory is the node's memory not in use, in bytes.
	FreeMemory uint64
	// Download is true when the token holds Sys.AccessNetwork on the node,
	// so the node fetches the boot ISO itself (download-url); otherwise
	// talosc uploads it.
	Download bool
}

// Storage is a storage as the compute nodes see it.
type Storage struct {
	ID      string
	Type    string
	Content []string
	// Shared storages hold one set of volumes for every node.
	Shared bool
}

// preflightCache remembers the Environment of one cluster, so one run
// reads the environment once however many phases ask.
type preflightCache struct {
	mu      sync.Mutex
	cluster *config.Cluster
	env     *Environment
}

// Preflight checks, with bulk reads and before any mutation, that the
// Proxmox cluster can run cluster: release 9 or newer, the token's
// effective privileges (reference §5.3), the datacenter firewall on, the
// configured nodes online and the storages present, enabled and holding
// the right content. The result is cached per cluster on the Cloud: the
// compute half calls it from Inventory, the image methods through
// environment.
func (c *Cloud) Preflight(ctx context.Context, cluster *config.Cluster) (*Environment, error) {
	c.pre.mu.Lock()
	defer c.pre.mu.Unlock()
	if c.pre.cluster == cluster && c.pre.env != nil {
		return c.pre.env, nil
	}
	env, err := c.preflight(ctx, cluster)
	if err != nil {
		return nil, err
	}
	c.pre.cluster, c.pre.env = cluster, env
	return env, nil
}

// environment is the Environment of the cluster the Cloud was opened for
// (the image methods are not given the cluster): the cached preflight, or a
// new one.
func (c *Cloud) environment(ctx context.Context) (*Environment, error) {
	return c.Preflight(ctx, c.cluster)
}

func (c *Cloud) preflight(ctx context.Context, cluster *config.Cluster) (*Environment, error) {
	px := cluster.Proxmox
	if px == nil {
		return nil, errors.New("proxmox: cluster.yaml has no proxmox section")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	env := &Environment{}
	var err error
	if env.Version, err = c.release(ctx); err != nil {
		return nil, err
	}
	var nodes goproxmox.NodeStatuses
	if err := c.client.Get(ctx, "/nodes", &nodes); err != nil {
		return nil, fmt.Errorf("proxmox: list the nodes: %w", err)
	}
	candidates, err := candidateNodes(px, nodes)
	if err != nil {
		return nil, err
	}
	if vnet := px.Network.Cluster.VNet; vnet != "" {
		if env.VNetZone, err = c.vnetZone(ctx, vnet); err != nil {
			return nil, err
		}
	}
	owned, err := c.ownedVMs(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	var perms goproxmox.Permissions
	if err := c.client.Get(ctx, "/access/permissions", &perms); err != nil {
		return nil, fmt.Errorf("proxmox: read the token's effective permissions (access/permissions): %w", err)
	}
	if err := checkPrivileges(perms, required(cluster, env.VNetZone, candidates, owned)); err != nil {
		return nil, err
	}
	var fw goproxmox.FirewallClusterOption
	if err := c.client.Get(ctx, "/cluster/firewall/options", &fw); err != nil {
		return nil, fmt.Errorf("proxmox: read the datacenter firewall options: %w", err)
	}
	if fw.Enable != 1 {
		return nil, errors.New("proxmox: the datacenter firewall is off, so the per-VM security allowlists (the security section) would not be enforced; " +
			"turn it on (Datacenter > Firewall > Options > Firewall: Yes, or pvesh set /cluster/firewall/options --enable 1) after allowing your own access to ports 8006 and 22")
	}
	if err := c.storages(ctx, px, env, candidates); err != nil {
		return nil, err
	}
	for i := range env.Nodes {
		env.Nodes[i].Download = effective(perms, "/nodes/"+env.Nodes[i].Name)["Sys.AccessNetwork"]
	}
	return env, nil
}

// release returns the pve-manager version, refusing releases before 9.
func (c *Cloud) release(ctx context.Context) (string, error) {
	var v goproxmox.Version
	if err := c.client.Get(ctx, "/version", &v); err != nil {
		return "", fmt.Errorf("proxmox: read the version: %w", err)
	}
	major, _, _ := strings.Cut(v.Version, ".")
	if n, err := strconv.Atoi(major); err != nil || n < minRelease {
		return "", fmt.Errorf("proxmox: %s runs Proxmox VE %q; talosc needs Proxmox VE %d or newer (VM NICs inherit the bridge MTU only there): upgrade the Proxmox cluster",
			c.url, v.Version, minRelease)
	}
	return v.Version, nil
}

// candidateNodes returns proxmox.nodes, each of which must exist and be
// online, or else every online node.
func candidateNodes(px *config.Proxmox, nodes goproxmox.NodeStatuses) ([]Node, error) {
	byName := map[string]*goproxmox.NodeStatus{}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		byName[n.Node] = n
		names = append(names, n.Node)
	}
	slices.Sort(names)
	node := func(n *goproxmox.NodeStatus) Node {
		return Node{Name: n.Node, Online: n.Status == "online", FreeMemory: n.MaxMem - min(n.Mem, n.MaxMem)}
	}
	var out []Node
	var problems []error
	for _, name := range px.Nodes {
		n := byName[name]
		switch {
		case n == nil:
			problems = append(problems, fmt.Errorf("proxmox.nodes: %q is not a node of the Proxmox cluster (nodes: %s); fix the name or remove it", name, strings.Join(names, ", ")))
		case n.Status != "online":
			problems = append(problems, fmt.Errorf("proxmox.nodes: node %q is %s; bring it online or remove it from proxmox.nodes", name, n.Status))
		default:
			out = append(out, node(n))
		}
	}
	if len(px.Nodes) == 0 {
		for _, n := range nodes {
			if n.Status == "online" {
				out = append(out, node(n))
			}
		}
		if len(out) == 0 {
			problems = append(problems, fmt.Errorf("proxmox: no node of the Proxmox cluster is online (nodes: %s)", strings.Join(names, ", ")))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// vnetZone returns the SDN zone of vnet, "" when the token sees no such
// VNet.
func (c *Cloud) vnetZone(ctx context.Context, vnet string) (string, error) {
	var vnets []goproxmox.VNet
	if err := c.client.Get(ctx, "/cluster/sdn/vnets", &vnets); err != nil {
		return "", fmt.Errorf("proxmox: list the SDN VNets: %w", err)
	}
	for _, v := range vnets {
		if v.Name == vnet {
			return v.Zone, nil
		}
	}
	return "", nil
}

// requirement is the privileges talosc needs on one ACL path.
type requirement struct {
	path  string
	privs []string
}

// Privileges of the reference's permission table (§5.3).
var (
	privsISOStorage = []string{"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.Audit"}
	privsStorage    = []string{"Datastore.AllocateSpace", "Datastore.Audit"}
	privsVM         = []string{
		"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.GuestAgent.Audit", "VM.Config.CDROM", "VM.Config.CPU",
		"VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
	}
)

// required lists the privileges cluster needs, by path, in the table's
// order. Beyond the reference's table, real PVE also needs Sys.Audit on /
// (cluster/firewall/options, cluster/status) and checks SDN.Use on the
// NIC's zone path, /sdn/zones/<zone>/<bridge>[/<vlan>], zone
// "localnetwork" for a plain bridge. Sys.AccessNetwork on a node is not
// required: without it the boot ISO is uploaded instead of downloaded.
func required(cluster *config.Cluster, vnetZone string, nodes []Node, owned []vmResource) []requirement {
	px := cluster.Proxmox
	// Pool.Audit: Proxmox lists only the pools a token may audit, and the
	// inventory finds the cluster's VMs through its pool.
	reqs := []requirement{{"/", []string{"Pool.Allocate", "Pool.Audit", "Sys.Audit"}}}
	add := func(path string, privs ...string) {
		i := slices.IndexFunc(reqs, func(r requirement) bool { return r.path == path })
		if i < 0 {
			reqs = append(reqs, requirement{path: path})
			i = len(reqs) - 1
		}
		for _, p := range privs {
			if !slices.Contains(reqs[i].privs, p) {
				reqs[i].privs = append(reqs[i].privs, p)
			}
		}
	}
	add("/storage/"+px.ISOStorage, privsISOStorage...)
	add("/storage/"+px.CIDataStorage, privsISOStorage...)
	add("/storage/"+px.Storage, privsStorage...)
	add("/vms", privsVM...)
	vmids := make([]int, len(owned))
	for i, vm := range owned {
		vmids[i] = vm.VMID
	}
	slices.Sort(vmids) // a stable message
	for _, id := range vmids {
		add("/vms/"+strconv.Itoa(id), privsVM...)
	}
	nic := func(zone, bridge string, vlan int) {
		path := "/sdn/zones/" + zone + "/" + bridge
		if vlan > 0 {
			path += "/" + strconv.Itoa(vlan)
		}
		add(path, "SDN.Use")
	}
	net := px.Network.Cluster
	switch {
	case net.Bridge != "":
		nic("localnetwork", net.Bridge, cluster.Network.Cluster.VLAN)
	case net.VNet != "" && vnetZone != "":
		nic(vnetZone, net.VNet, cluster.Network.Cluster.VLAN)
	case net.SDN != nil:
		add("/sdn", "SDN.Allocate", "SDN.Audit")
		nic(net.SDN.Name, net.SDN.Name, 0)
	}
	if ext := px.Network.External; ext != nil && cluster.Network.External != nil {
		nic("localnetwork", ext.Bridge, cluster.Network.External.VLAN)
	}
	for _, n := range nodes {
		add("/nodes/"+n.Name, "Sys.Audit")
	}
	return reqs
}

// checkPrivileges lists every privilege of reqs the token lacks, per path.
func checkPrivileges(perms goproxmox.Permissions, reqs []requirement) error {
	var missing []string
	for _, r := range reqs {
		have := effective(perms, r.path)
		var lack []string
		for _, p := range r.privs {
			if !have[p] {
				lack = append(lack, p)
			}
		}
		if len(lack) > 0 {
			slices.Sort(lack)
			missing = append(missing, r.path+": "+strings.Join(lack, ", "))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("Proxmox token is missing required effective permissions: %s; grant them to the token (proxmox.token_id), e.g. through the TalosCluster role, or use a token with --privsep 0", //nolint:staticcheck // the reference's message starts with the product name
		strings.Join(missing, "; "))
}

// effective returns the privileges the token holds on path, from
// access/permissions: that lists the effective privileges of the paths
// that have ACLs (and the top-level ones), each flagged with whether it
// propagates. Another path inherits the propagating privileges of its
// deepest listed ancestor; an ancestor listing only non-propagating ones
// (an ACL without propagate) passes on what is above it, as PVE does.
func effective(perms goproxmox.Permissions, path string) map[string]bool {
	out := map[string]bool{}
	if p, ok := perms[path]; ok {
		for priv := range p {
			out[priv] = true
		}
		return out
	}
	for anc := parentPath(path); ; anc = parentPath(anc) {
		for priv, propagates := range perms[anc] {
			if propagates {
				out[priv] = true
			}
		}
		if len(out) > 0 || anc == "/" {
			return out
		}
	}
}

// parentPath is the ACL path above path ("/" above "/vms").
func parentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}
