package proxmox

import (
	"strconv"
	"time"
)

func (s *Server) qemuRoutes(rt *router) {
	rt.handle("GET", "/nodes/{node}/qemu", s.listVMs)
	rt.handle("POST", "/nodes/{node}/qemu", s.createVM)
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}", s.vmIndex)
	rt.handle("DELETE", "/nodes/{node}/qemu/{vmid}", s.deleteVM)
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}/config", s.getConfig)
	rt.handle("POST", "/nodes/{node}/qemu/{vmid}/config", s.updateConfigAsync)
	rt.handle("PUT", "/nodes/{node}/qemu/{vmid}/config", s.updateConfigSync)
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}/pending", s.getPending)
	rt.handle("PUT", "/nodes/{node}/qemu/{vmid}/resize", s.resize)
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}/status", s.vmStatusIndex)
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}/status/current", s.vmStatusCurrent)
	for _, op := range []string{"start", "stop", "shutdown", "reboot"} {
		rt.handle("POST", "/nodes/{node}/qemu/{vmid}/status/"+op, s.power(op))
	}
	rt.handle("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", s.agentInterfaces)
	rt.handle("POST", "/nodes/{node}/qemu/{vmid}/agent/ping", s.agentPing)
}

// listEntry is a VM as /nodes/{node}/qemu lists it. The caller holds s.mu.
func (s *Server) listEntry(v *vm) map[string]any {
	m := map[string]any{
		"vmid": v.vmid, "name": v.conf["name"], "status": "stopped", "cpus": v.cpus(),
		"maxmem": v.memBytes(), "maxdisk": v.maxDisk(), "mem": 0, "disk": 0, "cpu": 0,
		"uptime": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	if v.lock == "create" {
		m["name"] = "VM " + strconv.Itoa(v.vmid)
	}
	if v.running {
		m["status"], m["pid"], m["uptime"] = "running", v.pid, int64(time.Since(v.started).Seconds())
		m["mem"], m["cpu"] = v.memBytes()/2, 0.01
	}
	if t := v.conf["tags"]; t != "" {
		m["tags"] = t
	}
	if v.lock != "" {
		m["lock"] = v.lock
	}
	if _, ok := v.conf["serial0"]; ok {
		m["serial"] = 1
	}
	return m
}

// vmResource is a VM as /cluster/resources lists it. The caller holds s.mu.
func (s *Server) vmResource(v *vm) map[string]any {
	m := s.listEntry(v)
	m["id"], m["type"], m["node"], m["template"] = "qemu/"+strconv.Itoa(v.vmid), "qemu", v.node, 0
	m["maxcpu"] = m["cpus"]
	delete(m, "cpus")
	delete(m, "pid")
	delete(m, "serial")
	if p := s.poolOf(v.vmid); p != "" {
		m["pool"] = p
	}
	return m
}

func (s *Server) listVMs(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"full"}}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, id := range sortedVMIDs(s.vms) {
		v := s.vms[id]
		if v.node == c.path["node"] && c.hasLocked("/vms/"+strconv.Itoa(id), "VM.Audit") {
			out = append(out, s.listEntry(v))
		}
	}
	return out, nil
}

func (s *Server) vmIndex(c *call) (any, error) {
	var out []map[string]string
	for _, d := range []string{"agent", "clone", "cloudinit", "config", "feature", "firewall", "migrate", "monitor", "move_disk", "pending", "resize", "rrd", "rrddata", "sendkey", "snapshot", "spiceproxy", "status", "template", "termproxy", "unlink", "vncproxy", "vncwebsocket"} {
		out = append(out, map[string]string{"subdir": d})
	}
	return out, nil
}

var createParams = []string{"vmid", "pool", "start", "storage", "unique", "force", "archive", "live-restore", "bwlimit"}

// createVM is POST /nodes/{node}/qemu: the VMID is reserved (locked
// "create") at once; a "qmcreate" task allocates the disks and writes the
// config, or removes the VM again when it fails.
func (s *Server) createVM(c *call) (any, error) {
	if err := c.p.check(withRequired(configSchema(createParams...), "vmid")); err != nil {
		return nil, err
	}
	if c.p.has("archive") || c.p.has("live-restore") {
		return nil, paramErr1("archive", "the lab does not simulate restores")
	}
	vmid, err := c.p.integer("vmid", 0)
	if err != nil {
		return nil, err
	}
	if vmid < 100 || vmid > 999999999 {
		return nil, paramErr1("vmid", "value must have a minimum value of 100")
	}
	start, err := c.p.boolean("start", false)
	if err != nil {
		return nil, err
	}
	pool, node, vmPath := c.p.str("pool"), c.path["node"], "/vms/"+strconv.Itoa(vmid)
	if !c.has(vmPath, "VM.Allocate") && (pool == "" || !c.has("/pool/"+pool, "VM.Allocate")) {
		return nil, forbidden(vmPath, "VM.Allocate")
	}
	if pool != "" {
		if err := c.require("/pool/"+pool, "Pool.Allocate"); err != nil {
			return nil, err
		}
	}
	changes, err := c.prepareChanges(vmid, map[string]string{}, true)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.vms[vmid]; old != nil {
		return nil, fail("unable to create VM %d - VM %d already exists on node '%s'", vmid, vmid, old.node)
	}
	if pool != "" && s.pools[pool] == nil {
		return nil, fail("pool '%s' does not exist", pool)
	}
	v := newVM(vmid, node)
	v.lock = "create"
	s.vms[vmid] = v
	abort := func() { delete(s.vms, vmid) }
	return s.startTask(taskSpec{
		node: node, typ: "qmcreate", id: strconv.Itoa(vmid), user: c.tok.id, abort: abort,
		finish: func() ([]string, error) {
			if err := s.applyChanges(v, changes); err != nil {
				abort()
				return nil, fail("unable to create VM %d - %v", vmid, err)
			}
			if v.conf["smbios1"] == "" {
				v.conf["smbios1"] = "uuid=" + s.uuid()
			}
			v.conf["vmgenid"] = s.uuid()
			v.conf["meta"] = "creation-qemu=10.0.2,ctime=" + strconv.FormatInt(time.Now().Unix(), 10)
			v.lock = ""
			if p := s.pools[pool]; p != nil {
				p.addVM(vmid)
			}
			s.emit(VMCreated, v)
			if !start {
				return nil, nil
			}
			return []string{"start VM " + strconv.Itoa(vmid)}, s.powerOn(v)
		},
	}), nil
}

func withRequired(s schema, keys ...string) schema {
	s.required = append(s.required, keys...)
	return s
}

func (s *Server) getConfig(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"current", "snapshot"}}); err != nil {
		return nil, err
	}
	vmid, err := c.vmid("VM.Audit")
	if err != nil {
		return nil, err
	}
	current, err := c.p.boolean("current", false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmAt(c.path["node"], vmid)
	if err != nil {
		return nil, err
	}
	conf := v.effective()
	if current {
		conf = cloneMap(v.conf)
	}
	out := typedConfig(conf)
	out["digest"] = v.digest()
	if v.lock != "" {
		out["lock"] = v.lock
	}
	return out, nil
}

func (s *Server) getPending(c *call) (any, error) {
	v, err := s.lockedVM(c, "VM.Audit")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	keys := map[string]bool{}
	for _, m := range []map[string]string{v.conf, v.pending} {
		for k := range m {
			keys[k] = true
		}
	}
	out := []map[string]any{}
	for _, k := range sortedKeys(keys) {
		e := map[string]any{"key": k}
		if val, ok := v.conf[k]; ok {
			e["value"] = typedValue(k, val, qemuIsNumeric)
		}
		if val, ok := v.pending[k]; ok {
			e["pending"] = typedValue(k, val, qemuIsNumeric)
		}
		if v.pendingDel[k] {
			e["delete"] = 1
		}
		out = append(out, e)
	}
	return out, nil
}

var updateParams = []string{"delete", "revert", "digest", "skiplock", "force", "background_delay"}

func (s *Server) updateConfigAsync(c *call) (any, error) { return s.updateConfig(c, false) }
func (s *Server) updateConfigSync(c *call) (any, error)  { return s.updateConfig(c, true) }

// updateConfig is POST (a "qmconfig" task) and PUT (synchronous) config.
func (s *Server) updateConfig(c *call, sync bool) (any, error) {
	if err := c.p.check(configSchema(updateParams...)); err != nil {
		return nil, err
	}
	vmid, err := pathVMID(c)
	if err != nil {
		return nil, err
	}
	skiplock, err := c.p.boolean("skiplock", false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	v, err := s.vmAt(c.path["node"], vmid)
	var current map[string]string
	if err == nil {
		current = v.effective()
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	changes, err := c.prepareChanges(vmid, current, false)
	if err != nil {
		return nil, err
	}
	reverts := splitList(c.p.str("revert"))
	if len(changes) == 0 && len(reverts) == 0 {
		return nil, paramErr1("delete", "no options specified")
	}
	apply := func() error {
		if v.lock != "" && !skiplock {
			return lockErr(v)
		}
		if err := c.checkDigest(v.digest()); err != nil {
			return err
		}
		for _, k := range reverts {
			delete(v.pending, k)
			delete(v.pendingDel, k)
		}
		return s.applyChanges(v, changes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vms[vmid] != v {
		return nil, configMissing(c.path["node"], vmid)
	}
	if sync {
		return nil, apply()
	}
	return s.startTask(taskSpec{
		node: v.node, typ: "qmconfig", id: strconv.Itoa(vmid), user: c.tok.id,
		finish: func() ([]string, error) {
			if s.vms[vmid] != v {
				return nil, configMissing(v.node, vmid)
			}
			return nil, apply()
		},
	}), nil
}

// deleteVM is DELETE /nodes/{node}/qemu/{vmid}: a "qmdestroy" task frees
// the disks and removes the VM from its pool.
func (s *Server) deleteVM(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"purge", "skiplock", "destroy-unreferenced-disks"}}); err != nil {
		return nil, err
	}
	vmid, err := c.vmid("VM.Allocate")
	if err != nil {
		return nil, err
	}
	skiplock, err := c.p.boolean("skiplock", false)
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"purge", "destroy-unreferenced-disks"} {
		if _, err := c.p.boolean(b, false); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmAt(c.path["node"], vmid)
	if err != nil {
		return nil, err
	}
	if v.lock != "" && !skiplock {
		return nil, lockErr(v)
	}
	if v.running {
		return nil, fail("VM %d is running - destroy failed", vmid)
	}
	return s.startTask(taskSpec{
		node: v.node, typ: "qmdestroy", id: strconv.Itoa(vmid), user: c.tok.id,
		finish: func() ([]string, error) {
			if v.running {
				return nil, fail("VM %d is running - destroy failed", vmid)
			}
			var log []string
			for _, vol := range v.volumes() {
				s.freeVolume(v.node, vol)
				log = append(log, "Removed volume '"+vol+"'")
			}
			for _, p := range s.pools {
				p.removeVM(vmid)
			}
			delete(s.vms, vmid)
			s.emit(VMDeleted, v)
			return append(log, "purging VM "+strconv.Itoa(vmid)+" from related configurations.."), nil
		},
	}), nil
}
