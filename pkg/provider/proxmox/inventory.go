package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// Ownership markers (reference §5.3): the pool, its comment and the VM
// tags. A VM is owned only when it carries the tags, is a member of the
// pool and the pool carries the comment (I-F1).
const (
	// TagManaged is the tag every managed VM carries.
	TagManaged = "taloscluster"
	poolPrefix = "taloscluster-"
)

// PoolID is the resource pool of a cluster's VMs.
func PoolID(cluster string) string { return poolPrefix + cluster }

// PoolComment is the comment marking the pool as the cluster's (also each
// VM's description).
func PoolComment(cluster string) string {
	return "managed-by=taloscluster cluster=" + cluster
}

// VMTags are a machine's VM tags, ";"-joined and lower-cased as Proxmox
// stores them.
func VMTags(m config.Machine, cluster string) string {
	return strings.ToLower(strings.Join([]string{TagManaged, "cluster_" + cluster, "role_" + m.Role, "pool_" + m.Pool}, ";"))
}

// splitTags splits a Proxmox tag list (";", "," or " " separated).
func splitTags(tags string) []string {
	return strings.FieldsFunc(strings.ToLower(tags), func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

// vmResource is a VM as pool members (and /cluster/resources) list it.
type vmResource struct {
	Type    string `json:"type"`
	VMID    int    `json:"vmid"`
	Name    string `json:"name"`
	Node    string `json:"node"`
	Status  string `json:"status"`
	Tags    string `json:"tags"`
	MaxDisk uint64 `json:"maxdisk"`
}

// poolEntry is a pool as GET /pools lists it; members when read by id.
type poolEntry struct {
	PoolID  string       `json:"poolid"`
	Comment string       `json:"comment"`
	Members []vmResource `json:"members"`
}

// ownedPool reads the cluster's pool with its VM members: nil when it does
// not exist, an error when it exists without the cluster's comment.
func (c *Cloud) ownedPool(ctx context.Context, cluster string) (*poolEntry, error) {
	id := PoolID(cluster)
	var pools []poolEntry
	if err := c.client.Get(ctx, "/pools", &pools); err != nil {
		return nil, fmt.Errorf("list Proxmox pools: %w", err)
	}
	i := slices.IndexFunc(pools, func(p poolEntry) bool { return p.PoolID == id })
	if i < 0 {
		return nil, nil
	}
	if err := checkPoolComment(pools[i], cluster); err != nil {
		return nil, err
	}
	var read []poolEntry
	if err := c.client.Get(ctx, "/pools?type=qemu&poolid="+url.QueryEscape(id), &read); err != nil {
		return nil, fmt.Errorf("read Proxmox pool %s: %w", id, err)
	}
	if len(read) != 1 {
		return nil, fmt.Errorf("read Proxmox pool %s: %d pools answered", id, len(read))
	}
	return &read[0], nil
}

// checkPoolComment refuses a pool of our name that another tool or person
// owns.
func checkPoolComment(p poolEntry, cluster string) error {
	if want := PoolComment(cluster); p.Comment != want {
		return fmt.Errorf("refusing to adopt the Proxmox pool %s: its comment is %q, not %q, so talosc does not own it; rename or delete that pool, or set its comment to %q if it is this cluster's",
			p.PoolID, p.Comment, want, want)
	}
	return nil
}

// ownedVMs lists the VMs of the cluster's pool that carry its tags, one
// per name (dedupe).
func (c *Cloud) ownedVMs(ctx context.Context, cluster string) ([]vmResource, error) {
	p, err := c.ownedPool(ctx, cluster)
	if err != nil || p == nil {
		return nil, err
	}
	return c.dedupe(ctx, ownedMembers(p, cluster))
}

// ownedMembers are the members of the cluster's pool p that carry its
// tags.
func ownedMembers(p *poolEntry, cluster string) []vmResource {
	var out []vmResource
	for _, m := range p.Members {
		tags := splitTags(m.Tags)
		if m.Type == "qemu" && slices.Contains(tags, TagManaged) && slices.Contains(tags, "cluster_"+strings.ToLower(cluster)) {
			out = append(out, m)
		}
	}
	return out
}

// Inventory runs the environment preflight (once per cluster), then lists
// the cluster's owned VMs with two pool reads and, for each running VM,
// one guest-agent read for its address.
func (c *Cloud) Inventory(ctx context.Context) (*provider.Inventory, error) {
	cluster := c.cluster
	if _, err := c.Preflight(ctx, cluster); err != nil {
		return nil, err
	}
	vms, err := c.ownedVMs(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	inv := &provider.Inventory{Machines: make([]provider.Machine, len(vms))}
	for i, r := range vms {
		inv.Machines[i] = machineOf(r, cluster)
	}
	provider.FanOut(ctx, len(vms), func(ctx context.Context, i int) error {
		if vms[i].Status == "running" {
			inv.Machines[i].Address = c.guestAddress(ctx, cluster, vms[i])
		}
		return nil
	})
	return inv, nil
}

// machineOf is an owned VM as the phases see it: ID is the VMID, Zone the
// Proxmox node it runs on, DiskGB its boot disk.
func machineOf(r vmResource, cluster *config.Cluster) provider.Machine {
	m := provider.Machine{
		Hostname: r.Name, ID: strconv.Itoa(r.VMID), Status: r.Status, Zone: r.Node, DiskGB: int(r.MaxDisk >> 30),
		Kind: KindVM, Stopped: strings.EqualFold(r.Status, "stopped"),
	}
	for _, t := range splitTags(r.Tags) {
		if v, ok := strings.CutPrefix(t, "role_"); ok {
			m.Role = v
		}
		if v, ok := strings.CutPrefix(t, "pool_"); ok {
			m.Pool = poolName(cluster, v)
		}
	}
	return m
}

// poolName maps a lower-cased pool tag back to the cluster.yaml pool.
func poolName(cluster *config.Cluster, tag string) string {
	if strings.EqualFold(tag, cluster.ControlPlane.Name) {
		return cluster.ControlPlane.Name
	}
	for _, p := range cluster.Workers {
		if strings.EqualFold(tag, p.Name) {
			return p.Name
		}
	}
	return tag
}

// vmRef is where an inventory machine lives: its node and VMID.
func vmRef(m provider.Machine) (string, int, error) {
	id, err := strconv.Atoi(m.ID)
	if err != nil || m.Zone == "" {
		return "", 0, fmt.Errorf("VM %s: inventory entry has no Proxmox node and VMID (id %q, node %q); rerun to read the inventory again", m.Hostname, m.ID, m.Zone)
	}
	return m.Zone, id, nil
}

// vmPath is the API path of a VM.
func vmPath(node string, vmid int) string {
	return fmt.Sprintf("/nodes/%s/qemu/%d", url.PathEscape(node), vmid)
}

// agentIface is one interface the guest agent reports.
type agentIface struct {
	Name  string `json:"name"`
	MAC   string `json:"hardware-address"`
	Addrs []struct {
		IP string `json:"ip-address"`
	} `json:"ip-addresses"`
}

// guestAddress is the VM's cluster address as the guest agent reports it:
// an IPv4 address of the NIC with the machine's cluster MAC (else of any
// NIC but lo), never a VIP or ingress address nor a link-local anchor.
// An agent that does not answer yet means no address.
func (c *Cloud) guestAddress(ctx context.Context, cluster *config.Cluster, r vmResource) netip.Addr {
	var out struct {
		Result []agentIface `json:"result"`
	}
	if err := c.client.Get(ctx, vmPath(r.Node, r.VMID)+"/agent/network-get-interfaces", &out); err != nil {
		return netip.Addr{}
	}
	mac := naming.MAC(cluster.Name, r.Name, 0)
	slices.SortStableFunc(out.Result, func(a, b agentIface) int {
		return boolRank(strings.EqualFold(b.MAC, mac)) - boolRank(strings.EqualFold(a.MAC, mac))
	})
	for _, iface := range out.Result {
		if iface.Name == "lo" {
			continue
		}
		for _, a := range iface.Addrs {
			if ip, err := netip.ParseAddr(a.IP); err == nil && clusterAddress(cluster, ip) {
				return ip
			}
		}
	}
	return netip.Addr{}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clusterAddress reports whether ip can be a node's own address: IPv4,
// not link-local, not a VIP and not in the ingress pool.
func clusterAddress(cluster *config.Cluster, ip netip.Addr) bool {
	if !ip.Is4() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip == cluster.Network.Cluster.KubeAPIVIP {
		return false
	}
	if ext := cluster.Network.External; ext != nil && (ip == ext.KubeAPIVIP || ext.IngressPool.Contains(ip)) {
		return false
	}
	return true
}

// isMissing reports a Proxmox answer that the object does not exist.
func isMissing(err error) bool {
	var apiErr *goproxmox.APIError
	return errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "does not exist")
}
