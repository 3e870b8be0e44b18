package proxmox

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var powerSchemas = map[string]schema{
	"start":    {names: []string{"skiplock", "timeout", "machine", "forceCPU", "migratedfrom", "migration_network", "migration_type", "stateuri", "targetstorage", "force-cpu", "nets"}},
	"stop":     {names: []string{"skiplock", "timeout", "keepActive", "migratedfrom", "overrule-shutdown"}},
	"shutdown": {names: []string{"skiplock", "timeout", "keepActive", "forceStop"}},
	"reboot":   {names: []string{"timeout"}},
}

// power serves POST status/{start,stop,shutdown,reboot}: checks that PVE
// makes before forking, then a qm<op> task that changes the power state
// when it ends.
func (s *Server) power(op string) handler {
	return func(c *call) (any, error) {
		if err := c.p.check(powerSchemas[op]); err != nil {
			return nil, err
		}
		vmid, err := c.vmid("VM.PowerMgmt")
		if err != nil {
			return nil, err
		}
		skiplock, err := c.p.boolean("skiplock", false)
		if err != nil {
			return nil, err
		}
		// The simulated guest always honours ACPI; script a guest that does
		// not with FailTasks (qmshutdown).
		if _, err := c.p.boolean("forceStop", true); err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		v, err := s.vmAt(c.path["node"], vmid)
		if err != nil {
			return nil, err
		}
		if v.lock != "" && !skiplock && op != "stop" {
			return nil, lockErr(v)
		}
		switch {
		case op == "start" && v.running:
			return nil, fail("VM %d already running", vmid)
		case (op == "shutdown" || op == "reboot") && !v.running:
			return nil, fail("VM %d not running", vmid)
		}
		id := strconv.Itoa(vmid)
		return s.startTask(taskSpec{
			node: v.node, typ: "qm" + op, id: id, user: c.tok.id,
			finish: func() ([]string, error) {
				if s.vms[vmid] != v {
					return nil, configMissing(v.node, vmid)
				}
				switch op {
				case "start":
					if v.running {
						return nil, fail("VM %d already running", vmid)
					}
					return nil, s.powerOn(v)
				case "stop":
					s.powerOff(v)
				case "shutdown":
					if !v.running {
						return nil, fail("VM %d not running", vmid)
					}
					s.powerOff(v)
				case "reboot":
					if !v.running {
						return nil, fail("VM %d not running", vmid)
					}
					s.powerOff(v)
					return []string{"Requesting HA start for VM " + id}, s.powerOn(v)
				}
				return nil, nil
			},
		}), nil
	}
}

// powerOn applies pending changes and starts the VM, failing like qemu
// does on missing bridges or media. The caller holds s.mu.
func (s *Server) powerOn(v *vm) error {
	conf := v.effective()
	n := s.nodes[v.node]
	for _, k := range sortedKeys(conf) {
		switch {
		case reNet.MatchString(k):
			_, _, opts := parseNet(conf[k])
			if br := opts["bridge"]; br != "" && !slices.Contains(n.Bridges, br) && !s.vnetOnNode(br, v.node) {
				return fail("bridge '%s' does not exist", br)
			}
		case reDrive.MatchString(k):
			opts, _ := propString(conf[k], "file")
			if f := opts["file"]; strings.Contains(f, ":") {
				store, _, _ := strings.Cut(f, ":")
				if _, _, err := s.volumeIn(v.node, store, f); err != nil {
					return err
				}
			}
		}
	}
	v.applyPending()
	s.pidSeq += 3
	v.running, v.started, v.pid, v.agentUp = true, time.Now(), s.pidSeq, false
	s.emit(VMStarted, v)
	return nil
}

// powerOff stops the VM (a no-op when it is stopped). The caller holds s.mu.
func (s *Server) powerOff(v *vm) {
	if !v.running {
		return
	}
	v.running, v.agentUp, v.pid = false, false, 0
	s.emit(VMStopped, v)
}

func (s *Server) vmStatusIndex(c *call) (any, error) {
	return []map[string]string{{"subdir": "current"}, {"subdir": "start"}, {"subdir": "stop"}, {"subdir": "reset"}, {"subdir": "shutdown"}, {"subdir": "suspend"}, {"subdir": "reboot"}, {"subdir": "resume"}}, nil
}

func (s *Server) vmStatusCurrent(c *call) (any, error) {
	v, err := s.lockedVM(c, "VM.Audit")
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m := s.listEntry(v)
	m["qmpstatus"] = m["status"]
	m["ha"] = map[string]any{"managed": 0}
	if agent, _ := propString(v.conf["agent"], "enabled"); trueRe.MatchString(agent["enabled"]) {
		m["agent"] = 1
	}
	if v.running {
		m["running-machine"] = "pc-q35-10.0+pve1"
		m["running-qemu"] = "10.0.2"
	}
	return m, nil
}

var sizeRe = regexp.MustCompile(`^(\+)?(\d+(?:\.\d+)?)([KMGT])?$`)

// resize is PUT resize: a "resize" task grows the disk; shrinking fails
// in the task, as in qemu-server.
func (s *Server) resize(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"disk", "size", "digest", "skiplock"}, required: []string{"disk", "size"}}); err != nil {
		return nil, err
	}
	vmid, err := c.vmid("VM.Config.Disk")
	if err != nil {
		return nil, err
	}
	disk, size := c.p.str("disk"), c.p.str("size")
	m := sizeRe.FindStringSubmatch(size)
	if m == nil {
		return nil, paramErr1("size", "value does not match the regex pattern")
	}
	if !reDrive.MatchString(disk) {
		return nil, paramErr1("disk", "value '%s' does not have a value in the enumeration", disk)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.vmAt(c.path["node"], vmid)
	if err != nil {
		return nil, err
	}
	return s.startTask(taskSpec{
		node: v.node, typ: "resize", id: strconv.Itoa(vmid), user: c.tok.id,
		finish: func() ([]string, error) { return s.resizeDisk(v, disk, m) },
	}), nil
}

func (s *Server) resizeDisk(v *vm, disk string, m []string) ([]string, error) {
	val, ok := v.conf[disk]
	if !ok {
		return nil, fail("disk '%s' does not exist", disk)
	}
	if isCDROM(val) {
		return nil, fail("you can't resize a cdrom")
	}
	opts, _ := propString(val, "file")
	old, err := parseSize(opts["size"])
	if err != nil {
		return nil, fail("unable to parse size of disk '%s'", disk)
	}
	n, _ := parseSize(m[2] + m[3])
	if m[3] == "" {
		n, _ = parseSize(m[2])
	}
	newSize := n
	if m[1] == "+" {
		newSize = old + n
	}
	if newSize < old {
		return nil, fail("shrinking disks is not supported")
	}
	file := opts["file"]
	delete(opts, "file")
	opts["size"] = formatSize(newSize)
	v.conf[disk] = printDrive(file, opts)
	store, _, _ := strings.Cut(file, ":")
	if st := s.storages[store]; st != nil {
		if vol := s.volumes[volKey{st.scope(v.node), file}]; vol != nil {
			vol.size = newSize
		}
	}
	return []string{fmt.Sprintf("Image resized to %d bytes", newSize)}, nil
}

// agentReady checks what qemu-server checks before talking to the agent.
// The caller holds s.mu.
func agentReady(v *vm) error {
	if !v.running {
		return fail("VM %d is not running", v.vmid)
	}
	if agent, _ := propString(v.conf["agent"], "enabled"); !trueRe.MatchString(agent["enabled"]) {
		return fail("No QEMU guest agent configured")
	}
	if !v.agentUp {
		return fail("QEMU guest agent is not running")
	}
	return nil
}

// agentVM finds the VM for an agent call. The caller holds s.mu.
func (s *Server) agentVM(c *call) (*vm, error) {
	vmid, err := pathVMID(c)
	if err != nil {
		return nil, err
	}
	if path := "/vms/" + strconv.Itoa(vmid); !c.hasLocked(path, "VM.GuestAgent.Audit") {
		return nil, forbidden(path, "VM.GuestAgent.Audit")
	}
	v, err := s.vmAt(c.path["node"], vmid)
	if err != nil {
		return nil, err
	}
	return v, agentReady(v)
}

func (s *Server) agentPing(c *call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.agentVM(c)
	return nil, err
}

// agentInterfaces is the guest agent's network-get-interfaces: lo plus the
// interfaces the Talos-node simulation reported (SetGuestAgent).
func (s *Server) agentInterfaces(c *call) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.agentVM(c)
	if err != nil {
		return nil, err
	}
	ifaces := []map[string]any{{
		"name": "lo", "hardware-address": "00:00:00:00:00:00",
		"ip-addresses": []map[string]any{{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8}, {"ip-address": "::1", "ip-address-type": "ipv6", "prefix": 128}},
		"statistics":   map[string]any{"rx-bytes": 0, "rx-packets": 0, "tx-bytes": 0, "tx-packets": 0, "rx-errs": 0, "rx-dropped": 0, "tx-errs": 0, "tx-dropped": 0},
	}}
	for _, gi := range v.guest {
		var addrs []map[string]any
		for _, a := range gi.Addrs {
			typ := "ipv4"
			if a.Addr().Is6() {
				typ = "ipv6"
			}
			addrs = append(addrs, map[string]any{"ip-address": a.Addr().String(), "ip-address-type": typ, "prefix": a.Bits()})
		}
		ifaces = append(ifaces, map[string]any{
			"name": gi.Name, "hardware-address": strings.ToLower(gi.MAC), "ip-addresses": addrs,
			"statistics": map[string]any{"rx-bytes": 1024, "rx-packets": 8, "tx-bytes": 1024, "tx-packets": 8, "rx-errs": 0, "rx-dropped": 0, "tx-errs": 0, "tx-dropped": 0},
		})
	}
	return map[string]any{"result": ifaces}, nil
}

// SetGuestAgent marks the VM's guest agent as running and reporting these
// interfaces (the Talos-node simulation calls it once a node has booted).
// An interface without a MAC gets the MAC of the NIC with its index
// (eth0 ↔ net0). Stopping the VM takes the agent down again.
func (s *Server) SetGuestAgent(vmid int, ifaces ...GuestInterface) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vms[vmid]
	if v == nil {
		return fmt.Errorf("no VM %d", vmid)
	}
	if !v.running {
		return fmt.Errorf("VM %d is not running", vmid)
	}
	v.guest = nil
	for i, gi := range ifaces {
		if gi.Name == "" {
			gi.Name = "eth" + strconv.Itoa(i)
		}
		if gi.MAC == "" {
			idx, _ := strconv.Atoi(strings.TrimLeft(gi.Name, "abcdefghijklmnopqrstuvwxyz"))
			gi.MAC = v.nicMAC(idx)
		}
		gi.Addrs = slices.Clone(gi.Addrs)
		v.guest = append(v.guest, gi)
	}
	v.agentUp = true
	return nil
}

// SetGuestAddress is SetGuestAgent for one interface, eth0 (net0's MAC).
func (s *Server) SetGuestAddress(vmid int, addrs ...netip.Prefix) error {
	return s.SetGuestAgent(vmid, GuestInterface{Name: "eth0", Addrs: addrs})
}
