package proxmox

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Storage is one storage definition of the cluster (storage.cfg).
type Storage struct {
	ID string
	// Type is the plugin type: "dir", "lvmthin", "zfspool", "nfs", "rbd", ...
	Type string
	// Content are the content types it holds: images, rootdir, iso,
	// vztmpl, backup, snippets, import.
	Content []string
	// Shared storages hold one set of volumes for every node.
	Shared   bool
	Disabled bool
	// Nodes restricts the storage to these nodes (nil: every node).
	Nodes []string
	// Total is its capacity in bytes (default 100 GiB).
	Total uint64
}

type storage struct {
	Storage
}

// volKey identifies a volume: node-local storages keep a set per node,
// shared ones a single set (scope "").
type volKey struct {
	scope string
	volid string
}

type volume struct {
	storage string
	node    string // "" on shared storage
	volid   string
	content string
	format  string
	size    uint64
	vmid    int
	ctime   time.Time
	data    []byte // iso, vztmpl and import files
}

func (s *Server) setStorages(sts []Storage) error {
	s.storages = map[string]*storage{}
	for _, st := range sts {
		if st.ID == "" || s.storages[st.ID] != nil {
			return fmt.Errorf("storage %q: empty or duplicate id", st.ID)
		}
		if st.Type == "" {
			st.Type = "dir"
		}
		if st.Total == 0 {
			st.Total = 100 * gib
		}
		st.Content = slices.Sorted(slices.Values(st.Content))
		s.storages[st.ID] = &storage{Storage: st}
		s.storageOrder = append(s.storageOrder, st.ID)
	}
	return nil
}

func (st *storage) onNode(n string) bool {
	return len(st.Nodes) == 0 || slices.Contains(st.Nodes, n)
}

func (st *storage) supports(content string) bool { return slices.Contains(st.Content, content) }

func (st *storage) scope(node string) string {
	if st.Shared {
		return ""
	}
	return node
}

// storageOn returns the storage if it exists and is available on node.
// The caller holds s.mu.
func (s *Server) storageOn(node, id string) (*storage, error) {
	st := s.storages[id]
	if st == nil {
		return nil, fail("storage '%s' does not exist", id)
	}
	if !st.onNode(node) {
		return nil, fail("storage '%s' is not available on node '%s'", id, node)
	}
	if st.Disabled {
		return nil, fail("storage '%s' is disabled", id)
	}
	return st, nil
}

// used sums the sizes of the storage's volumes in one scope.
func (s *Server) used(st *storage, node string) uint64 {
	var n uint64
	scope := st.scope(node)
	for k, v := range s.volumes {
		if v.storage == st.ID && k.scope == scope {
			n += v.size
		}
	}
	return n
}

// volumePath is where PVE keeps a volume on disk.
func volumePath(st *storage, vol *volume) string {
	_, name, _ := strings.Cut(vol.volid, ":")
	base := "/mnt/pve/" + st.ID
	if st.ID == "local" {
		base = "/var/lib/vz"
	}
	switch {
	case vol.content == "iso":
		return base + "/template/" + name
	case vol.content == "vztmpl":
		return base + "/template/cache/" + strings.TrimPrefix(name, "vztmpl/")
	case vol.content == "import":
		return base + "/" + name
	case st.Type == "dir" || st.Type == "nfs":
		return base + "/images/" + name
	default:
		return "/dev/" + st.ID + "/" + name
	}
}

// qualifyVolume turns "iso/x.iso" into "<storage>:iso/x.iso".
func qualifyVolume(storageID, v string) string {
	if strings.Contains(v, ":") {
		return v
	}
	return storageID + ":" + v
}

func (s *Server) storageRoutes(rt *router) {
	rt.handle("GET", "/nodes/{node}/storage", s.listStorages)
	rt.handle("GET", "/nodes/{node}/storage/{storage}", s.storageIndex)
	rt.handle("GET", "/nodes/{node}/storage/{storage}/status", s.storageStatus)
	rt.handle("GET", "/nodes/{node}/storage/{storage}/content", s.listContent)
	rt.handle("GET", "/nodes/{node}/storage/{storage}/content/{volume...}", s.volumeAttributes)
	rt.handle("DELETE", "/nodes/{node}/storage/{storage}/content/{volume...}", s.deleteVolume)
	rt.handleRaw("POST", "/nodes/{node}/storage/{storage}/upload", s.upload)
	rt.handle("POST", "/nodes/{node}/storage/{storage}/download-url", s.downloadURL)
}

// storageEntry is a storage as /nodes/{node}/storage lists it. The caller
// holds s.mu.
func (s *Server) storageEntry(st *storage, node string) map[string]any {
	m := map[string]any{
		"storage": st.ID, "type": st.Type, "content": strings.Join(st.Content, ","),
		"shared": b2i(st.Shared), "enabled": b2i(!st.Disabled), "active": b2i(!st.Disabled),
	}
	if !st.Disabled {
		used := s.used(st, node)
		m["total"], m["used"], m["avail"] = st.Total, used, st.Total-min(used, st.Total)
		m["used_fraction"] = float64(used) / float64(st.Total)
	}
	return m
}

func (s *Server) listStorages(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"content", "enabled", "format", "storage", "target"}}); err != nil {
		return nil, err
	}
	enabledOnly, err := c.p.boolean("enabled", false)
	if err != nil {
		return nil, err
	}
	node := c.path["node"]
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, id := range s.storageOrder {
		st := s.storages[id]
		switch {
		case !st.onNode(node), enabledOnly && st.Disabled,
			c.p.has("storage") && c.p.str("storage") != id,
			c.p.has("content") && !slices.ContainsFunc(splitList(c.p.str("content")), st.supports),
			!c.hasAnyLocked("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace"):
			continue
		}
		out = append(out, s.storageEntry(st, node))
	}
	return out, nil
}

func (s *Server) storageIndex(c *call) (any, error) {
	return []map[string]string{
		{"subdir": "content"},
		{"subdir": "download-url"},
		{"subdir": "file-restore"},
		{"subdir": "import-metadata"},
		{"subdir": "prunebackups"},
		{"subdir": "rrd"},
		{"subdir": "rrddata"},
		{"subdir": "status"},
		{"subdir": "upload"},
	}, nil
}

func (s *Server) storageStatus(c *call) (any, error) {
	id := c.path["storage"]
	if err := c.requireAny("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storages[id]
	if st == nil || !st.onNode(c.path["node"]) {
		return nil, paramErr1("storage", "No such storage.")
	}
	return s.storageEntry(st, c.path["node"]), nil
}

func volumeEntry(v *volume) map[string]any {
	m := map[string]any{"volid": v.volid, "content": v.content, "format": v.format, "size": v.size, "ctime": v.ctime.Unix()}
	if v.vmid != 0 {
		m["vmid"] = v.vmid
		m["used"] = v.size
	}
	return m
}

func (s *Server) listContent(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"content", "vmid"}}); err != nil {
		return nil, err
	}
	id, node := c.path["storage"], c.path["node"]
	if err := c.requireAny("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	vmid, err := c.p.integer("vmid", 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storageOn(node, id)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, k := range slices.SortedFunc(maps.Keys(s.volumes), func(a, b volKey) int { return strings.Compare(a.volid, b.volid) }) {
		v := s.volumes[k]
		if v.storage != id || k.scope != st.scope(node) || (c.p.has("content") && v.content != c.p.str("content")) || (vmid != 0 && v.vmid != vmid) {
			continue
		}
		out = append(out, volumeEntry(v))
	}
	return out, nil
}

// volumeIn finds a volume of storage id as seen from node. The caller
// holds s.mu.
func (s *Server) volumeIn(node, id, ref string) (*storage, *volume, error) {
	st, err := s.storageOn(node, id)
	if err != nil {
		return nil, nil, err
	}
	volid := qualifyVolume(id, ref)
	v := s.volumes[volKey{st.scope(node), volid}]
	if v == nil {
		return st, nil, fail("volume '%s' does not exist", volid)
	}
	return st, v, nil
}

func (s *Server) volumeAttributes(c *call) (any, error) {
	id := c.path["storage"]
	if err := c.requireAny("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, v, err := s.volumeIn(c.path["node"], id, c.path["volume"])
	if err != nil {
		return nil, err
	}
	return map[string]any{"path": volumePath(st, v), "size": v.size, "used": v.size, "format": v.format}, nil
}

// deleteVolume frees a volume in an "imgdel" task.
func (s *Server) deleteVolume(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"delay"}}); err != nil {
		return nil, err
	}
	id, node := c.path["storage"], c.path["node"]
	if err := c.require("/storage/"+id, "Datastore.Allocate"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, v, err := s.volumeIn(node, id, c.path["volume"])
	if err != nil {
		return nil, err
	}
	if owner := s.vms[v.vmid]; owner != nil && slices.Contains(owner.volumes(), v.volid) {
		return nil, fail("unable to delete volume '%s' - volume is used by VM %d", v.volid, v.vmid)
	}
	key := volKey{st.scope(node), v.volid}
	return s.startTask(taskSpec{
		node: node, typ: "imgdel", user: c.tok.id, log: []string{"removing volume '" + v.volid + "'"},
		finish: func() ([]string, error) {
			delete(s.volumes, key)
			return []string{"Removed volume '" + v.volid + "'"}, nil
		},
	}), nil
}

// storageResources lists the storages of /cluster/resources. The caller
// holds s.mu.
func (s *Server) storageResources(c *call) []map[string]any {
	var out []map[string]any
	for _, name := range s.nodeOrder {
		if s.nodes[name].Offline {
			continue
		}
		for _, id := range s.storageOrder {
			st := s.storages[id]
			if !st.onNode(name) || st.Disabled || !c.hasAnyLocked("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace") {
				continue
			}
			out = append(out, map[string]any{
				"id": "storage/" + name + "/" + id, "type": "storage", "storage": id, "node": name,
				"status": "available", "content": strings.Join(st.Content, ","), "plugintype": st.Type,
				"shared": b2i(st.Shared), "disk": s.used(st, name), "maxdisk": st.Total,
			})
		}
	}
	return out
}

// allocDisk creates a VM disk volume of size bytes. The caller holds s.mu.
func (s *Server) allocDisk(st *storage, node string, vmid int, size uint64) (*volume, error) {
	if !st.supports("images") {
		return nil, fail("storage '%s' does not support content-type 'images'", st.ID)
	}
	scope := st.scope(node)
	for n := 0; ; n++ {
		name := fmt.Sprintf("vm-%d-disk-%d", vmid, n)
		volid := st.ID + ":" + name
		if st.Type == "dir" || st.Type == "nfs" {
			volid = fmt.Sprintf("%s:%d/%s.raw", st.ID, vmid, name)
		}
		if s.volumes[volKey{scope, volid}] != nil {
			continue
		}
		v := &volume{storage: st.ID, node: scope, volid: volid, content: "images", format: "raw", size: size, vmid: vmid, ctime: time.Now()}
		s.volumes[volKey{scope, volid}] = v
		return v, nil
	}
}

var isoNameRe = regexp.MustCompile(`(?i)^[^/]+\.(iso|img)$`)
