package proxmox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node is one cluster node.
type Node struct {
	Name    string
	Offline bool
	// MaxMem is its memory in bytes (default 64 GiB); BaseMem what the host
	// itself uses (default 2 GiB). Running VMs add their memory.
	MaxMem  uint64
	BaseMem uint64
	// MaxCPU is its CPU count (default 16).
	MaxCPU int
	// IP is the address /cluster/status reports (default 127.0.10.<n>).
	IP string
	// Bridges are bridges this node has besides Options.Bridges.
	Bridges []string
}

type node struct {
	Node
	nodeid, pstart int
	booted         time.Time
}

const gib = 1 << 30

func (s *Server) setNodes(ns []Node) error {
	s.nodes = map[string]*node{}
	for i, n := range ns {
		if n.Name == "" || s.nodes[n.Name] != nil {
			return fmt.Errorf("node %q: empty or duplicate name", n.Name)
		}
		if n.MaxMem == 0 {
			n.MaxMem = 64 * gib
		}
		if n.BaseMem == 0 {
			n.BaseMem = 2 * gib
		}
		if n.MaxCPU == 0 {
			n.MaxCPU = 16
		}
		if n.IP == "" {
			n.IP = fmt.Sprintf("127.0.10.%d", i+1)
		}
		n.Bridges = append(slices.Clone(s.opts.Bridges), n.Bridges...)
		s.nodes[n.Name] = &node{Node: n, nodeid: i + 1, pstart: 0x100000 * (i + 1), booted: time.Now().Add(-72 * time.Hour)}
		s.nodeOrder = append(s.nodeOrder, n.Name)
	}
	return nil
}

// SetNodeOnline takes a node offline (requests proxied to it fail with 595,
// it is listed "offline") or back online.
func (s *Server) SetNodeOnline(name string, online bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	if n == nil {
		return fmt.Errorf("no node %q", name)
	}
	n.Offline = !online
	return nil
}

// memUsed is the node's used memory: the host plus its running VMs.
// The caller holds s.mu.
func (s *Server) memUsed(n *node) uint64 {
	used := n.BaseMem
	for _, v := range s.vms {
		if v.node == n.Name && v.running {
			used += v.memBytes()
		}
	}
	return used
}

func (s *Server) clusterRoutes(rt *router) {
	rt.handle("GET", "/nodes", s.listNodes)
	rt.handle("GET", "/nodes/{node}/status", s.nodeStatus)
	rt.handle("GET", "/nodes/{node}/version", s.getVersion)
	rt.handle("GET", "/nodes/{node}/network", s.nodeNetwork)
	rt.handle("GET", "/cluster/status", s.clusterStatus)
	rt.handle("GET", "/cluster/resources", s.clusterResources)
	rt.handle("GET", "/cluster/nextid", s.nextID)
}

func (s *Server) getVersion(c *call) (any, error) {
	release := s.opts.Version
	if i := strings.LastIndex(release, "."); i > 0 {
		release = release[:i]
	}
	return map[string]any{"version": s.opts.Version, "release": release, "repoid": "4b06efb5db453f29"}, nil
}

// nodeEntry is a node as /nodes and /cluster/resources list it. The caller
// holds s.mu.
func (s *Server) nodeEntry(n *node) map[string]any {
	m := map[string]any{"node": n.Name, "id": "node/" + n.Name, "type": "node", "level": "", "ssl_fingerprint": s.fingerprint}
	if n.Offline {
		m["status"] = "offline"
		return m
	}
	m["status"] = "online"
	m["maxcpu"] = n.MaxCPU
	m["maxmem"] = n.MaxMem
	m["mem"] = s.memUsed(n)
	m["cpu"] = 0.0123
	m["maxdisk"] = uint64(100 * gib)
	m["disk"] = uint64(8 * gib)
	m["uptime"] = int64(time.Since(n.booted).Seconds())
	return m
}

func (s *Server) listNodes(c *call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, name := range s.nodeOrder {
		out = append(out, s.nodeEntry(s.nodes[name]))
	}
	return out, nil
}

func (s *Server) nodeStatus(c *call) (any, error) {
	name := c.path["node"]
	if err := c.require("/nodes/"+name, "Sys.Audit"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	used := s.memUsed(n)
	return map[string]any{
		"uptime":         int64(time.Since(n.booted).Seconds()),
		"cpu":            0.0123,
		"wait":           0.0001,
		"idle":           0,
		"loadavg":        []string{"0.12", "0.20", "0.25"},
		"kversion":       "Linux 6.14.11-4-pve #1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4 (2025-10-10T08:04Z)",
		"pveversion":     "pve-manager/" + s.opts.Version + "/4b06efb5db453f29",
		"cpuinfo":        map[string]any{"model": "talosc-lab virtual CPU", "cores": n.MaxCPU, "cpus": n.MaxCPU, "sockets": 1, "mhz": "2400.000", "hvm": "1", "flags": "", "user_hz": 100},
		"memory":         map[string]any{"total": n.MaxMem, "used": used, "free": n.MaxMem - min(used, n.MaxMem)},
		"swap":           map[string]any{"total": 0, "used": 0, "free": 0},
		"rootfs":         map[string]any{"total": uint64(100 * gib), "used": uint64(8 * gib), "free": uint64(92 * gib), "avail": uint64(87 * gib)},
		"ksm":            map[string]any{"shared": 0},
		"current-kernel": map[string]any{"sysname": "Linux", "release": "6.14.11-4-pve", "machine": "x86_64", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.14.11-4"},
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
	}, nil
}

func (s *Server) clusterStatus(c *call) (any, error) {
	if err := c.require("/", "Sys.Audit"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	online := 0
	var nodes []map[string]any
	for i, name := range s.nodeOrder {
		n := s.nodes[name]
		if !n.Offline {
			online++
		}
		nodes = append(nodes, map[string]any{
			"type": "node", "id": "node/" + name, "name": name, "nodeid": n.nodeid,
			"ip": n.IP, "online": b2i(!n.Offline), "local": b2i(i == 0), "level": "",
		})
	}
	out := []map[string]any{{
		"type": "cluster", "id": "cluster", "name": "talosc-lab", "version": len(s.nodeOrder) + 1,
		"nodes": len(s.nodeOrder), "quorate": b2i(online*2 > len(s.nodeOrder)),
	}}
	return append(out, nodes...), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clusterResources is /cluster/resources, filtered by type and by what
// the token may audit, as PVE filters it.
func (s *Server) clusterResources(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"type"}}); err != nil {
		return nil, err
	}
	typ := c.p.str("type")
	switch typ {
	case "", "vm", "storage", "node", "sdn", "pool":
	default:
		return nil, paramErr1("type", "value '%s' does not have a value in the enumeration 'vm, storage, node, sdn, pool'", typ)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	if typ == "" || typ == "vm" {
		for _, id := range sortedVMIDs(s.vms) {
			if v := s.vms[id]; c.hasLocked("/vms/"+strconv.Itoa(id), "VM.Audit") {
				out = append(out, s.vmResource(v))
			}
		}
	}
	if typ == "" || typ == "node" {
		for _, name := range s.nodeOrder {
			out = append(out, s.nodeEntry(s.nodes[name]))
		}
	}
	if typ == "" || typ == "storage" {
		out = append(out, s.storageResources(c)...)
	}
	if typ == "" || typ == "pool" {
		for _, id := range sortedKeys(s.pools) {
			if c.hasLocked("/pool/"+id, "Pool.Audit") {
				out = append(out, map[string]any{"id": "/pool/" + id, "pool": id, "type": "pool"})
			}
		}
	}
	if typ == "" || typ == "sdn" {
		out = append(out, s.sdnResources()...)
	}
	return out, nil
}

// nextID is the lowest free VMID (>= 100), or, with vmid, that VMID if
// it is free.
func (s *Server) nextID(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"vmid"}}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.p.has("vmid") {
		id, err := c.p.integer("vmid", 0)
		if err != nil {
			return nil, err
		}
		if s.vms[id] != nil {
			return nil, paramErr1("vmid", "VM %d already exists", id)
		}
		return strconv.Itoa(id), nil
	}
	for id := 100; ; id++ {
		if s.vms[id] == nil {
			return strconv.Itoa(id), nil
		}
	}
}

// nodeNetwork lists a node's interfaces: its bridges and, for
// type=any_bridge, the SDN VNets applied on it (as PVE adds them).
func (s *Server) nodeNetwork(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"type"}}); err != nil {
		return nil, err
	}
	typ := c.p.str("type")
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[c.path["node"]]
	out := []map[string]any{}
	if typ == "" || typ == "bridge" || typ == "any_bridge" || typ == "any_local_bridge" {
		for i, b := range n.Bridges {
			iface := map[string]any{
				"iface": b, "type": "bridge", "active": 1, "autostart": 1, "priority": 10 + i,
				"bridge_ports": fmt.Sprintf("eno%d", i+1), "bridge_stp": "off", "bridge_fd": "0",
				"families": []string{"inet"}, "method": "manual", "method6": "manual",
			}
			if mtu := s.opts.BridgeMTU[b]; mtu > 0 {
				iface["mtu"] = strconv.Itoa(mtu)
			}
			out = append(out, iface)
		}
	}
	if typ == "any_bridge" {
		out = append(out, s.localVNets(n.Name)...)
	}
	return out, nil
}
