package proxmox

import (
	"regexp"
	"slices"
)

// pool is a resource pool: a comment and its members.
type pool struct {
	id, comment string
	vms         []int
	storage     []string
}

func (p *pool) addVM(vmid int) {
	if !slices.Contains(p.vms, vmid) {
		p.vms = append(p.vms, vmid)
	}
}

func (p *pool) removeVM(vmid int) {
	p.vms = slices.DeleteFunc(p.vms, func(id int) bool { return id == vmid })
}

// poolOf is the pool a VM belongs to. The caller holds s.mu.
func (s *Server) poolOf(vmid int) string {
	for id, p := range s.pools {
		if slices.Contains(p.vms, vmid) {
			return id
		}
	}
	return ""
}

var poolIDRe = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(/[A-Za-z0-9.\-_]+){0,2}$`)

func (s *Server) poolRoutes(rt *router) {
	rt.handle("GET", "/pools", s.listPools)
	rt.handle("POST", "/pools", s.createPool)
	rt.handle("PUT", "/pools", s.updatePool)
	rt.handle("DELETE", "/pools", s.deletePool)
	rt.handle("GET", "/pools/{poolid...}", s.getPoolDeprecated)
	rt.handle("PUT", "/pools/{poolid...}", s.updatePool)
	rt.handle("DELETE", "/pools/{poolid...}", s.deletePool)
}

// poolID is the pool of the path (deprecated form) or of the parameters.
func (c *call) poolID() string {
	if id := c.path["poolid"]; id != "" {
		return id
	}
	return c.p.str("poolid")
}

// members lists a pool's members as /cluster/resources entries. The caller
// holds s.mu.
func (s *Server) members(c *call, p *pool, typ string) []map[string]any {
	out := []map[string]any{}
	if typ == "" || typ == "qemu" {
		for _, id := range slices.Sorted(slices.Values(p.vms)) {
			if v := s.vms[id]; v != nil {
				out = append(out, s.vmResource(v))
			}
		}
	}
	if typ == "" || typ == "storage" {
		for _, e := range s.storageResources(c) {
			if slices.Contains(p.storage, e["storage"].(string)) {
				out = append(out, e)
			}
		}
	}
	return out
}

func (s *Server) listPools(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"poolid", "type"}}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := c.p.str("poolid"); id != "" {
		if !c.hasLocked("/pool/"+id, "Pool.Audit") {
			return nil, forbidden("/pool/"+id, "Pool.Audit")
		}
		p := s.pools[id]
		if p == nil {
			return nil, fail("pool '%s' does not exist", id)
		}
		return []map[string]any{{"poolid": id, "comment": p.comment, "members": s.members(c, p, c.p.str("type"))}}, nil
	}
	out := []map[string]any{}
	for _, id := range sortedKeys(s.pools) {
		if c.hasLocked("/pool/"+id, "Pool.Audit") {
			out = append(out, map[string]any{"poolid": id, "comment": s.pools[id].comment})
		}
	}
	return out, nil
}

func (s *Server) getPoolDeprecated(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"type"}}); err != nil {
		return nil, err
	}
	id := c.poolID()
	if err := c.require("/pool/"+id, "Pool.Audit"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[id]
	if p == nil {
		return nil, fail("pool '%s' does not exist", id)
	}
	return map[string]any{"comment": p.comment, "members": s.members(c, p, c.p.str("type"))}, nil
}

func (s *Server) createPool(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"poolid", "comment"}, required: []string{"poolid"}}); err != nil {
		return nil, err
	}
	id := c.p.str("poolid")
	if !poolIDRe.MatchString(id) {
		return nil, paramErr1("poolid", "invalid format - invalid pool ID '%s'", id)
	}
	if err := c.require("/pool/"+id, "Pool.Allocate"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pools[id] != nil {
		return nil, fail("pool '%s' already exists", id)
	}
	s.pools[id] = &pool{id: id, comment: c.p.str("comment")}
	return nil, nil
}

// updatePool sets the comment and adds (or, with delete=1, removes) VMs
// and storages.
func (s *Server) updatePool(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"poolid", "comment", "vms", "storage", "delete", "allow-move", "digest"}}); err != nil {
		return nil, err
	}
	id := c.poolID()
	if err := c.require("/pool/"+id, "Pool.Allocate"); err != nil {
		return nil, err
	}
	del, err := c.p.boolean("delete", false)
	if err != nil {
		return nil, err
	}
	move, err := c.p.boolean("allow-move", false)
	if err != nil {
		return nil, err
	}
	var vmids []int
	for _, v := range splitList(c.p.str("vms")) {
		n, err := parseInt("vms", v)
		if err != nil {
			return nil, err
		}
		if err := c.require("/vms/"+v, "VM.Allocate"); err != nil {
			return nil, err
		}
		vmids = append(vmids, n)
	}
	stores := splitList(c.p.str("storage"))
	for _, st := range stores {
		if err := c.require("/storage/"+st, "Datastore.Allocate"); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[id]
	if p == nil {
		return nil, fail("pool '%s' does not exist", id)
	}
	for _, vmid := range vmids {
		if s.vms[vmid] == nil && !del {
			return nil, fail("VM %d does not exist", vmid)
		}
		if old := s.poolOf(vmid); !del && old != "" && old != id && !move {
			return nil, fail("VM %d belongs already to pool '%s'", vmid, old)
		}
	}
	for _, st := range stores {
		if s.storages[st] == nil {
			return nil, fail("storage '%s' does not exist", st)
		}
	}
	if c.p.has("comment") {
		p.comment = c.p.str("comment")
	}
	for _, vmid := range vmids {
		for _, other := range s.pools {
			other.removeVM(vmid)
		}
		if !del {
			p.addVM(vmid)
		}
	}
	for _, st := range stores {
		p.storage = slices.DeleteFunc(p.storage, func(x string) bool { return x == st })
		if !del {
			p.storage = append(p.storage, st)
		}
	}
	return nil, nil
}

// deletePool removes an empty pool.
func (s *Server) deletePool(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"poolid"}}); err != nil {
		return nil, err
	}
	id := c.poolID()
	if id == "" {
		return nil, paramErr1("poolid", "property is missing and it is not optional")
	}
	if err := c.require("/pool/"+id, "Pool.Allocate"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pools[id]
	if p == nil {
		return nil, fail("pool '%s' does not exist", id)
	}
	if len(p.vms) > 0 || len(p.storage) > 0 {
		return nil, fail("pool '%s' is not empty", id)
	}
	delete(s.pools, id)
	return nil, nil
}
