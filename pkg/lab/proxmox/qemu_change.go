package proxmox

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// change is one validated config change.
type change struct {
	key, value string
	del        bool
	drive      *driveSpec
	net        bool
}

// driveSpec is a parsed drive value.
type driveSpec struct {
	file  string
	opts  map[string]string
	alloc bool   // "<storage>:<size in GiB>": allocate a new volume
	store string // storage of file
	size  uint64 // bytes, for allocations
	cdrom bool
}

var allocRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9\-_.]*):(\d+(?:\.\d+)?)$`)

func parseDrive(key, val string) (*driveSpec, error) {
	opts, _ := propString(val, "file")
	d := &driveSpec{file: opts["file"], opts: opts, cdrom: opts["media"] == "cdrom" || opts["file"] == "cdrom"}
	delete(opts, "file")
	switch {
	case d.file == "":
		return nil, paramErr1(key, "invalid format - missing 'file'")
	case d.file == "none" || d.file == "cdrom":
		if !d.cdrom && key != "ide2" {
			return nil, paramErr1(key, "invalid format - only a CD-ROM can be empty")
		}
		return d, nil
	case strings.HasPrefix(d.file, "/"):
		return nil, &apiError{status: 403, message: "Permission check failed (" + d.file + ": only root can pass arbitrary filesystem paths)"}
	case opts["import-from"] != "":
		return nil, paramErr1(key, "the lab does not simulate import-from")
	}
	store, rest, ok := strings.Cut(d.file, ":")
	if !ok {
		return nil, paramErr1(key, "invalid format - unable to parse volume ID '%s'", d.file)
	}
	d.store = store
	if m := allocRe.FindStringSubmatch(d.file); m != nil && !d.cdrom {
		gb, _ := strconv.ParseFloat(m[2], 64)
		d.alloc, d.size = true, uint64(gb*float64(gib))
		switch key {
		case "efidisk0":
			d.size = 128 << 10
			if opts["efitype"] == "4m" {
				d.size = 4 << 20
			}
		case "tpmstate0":
			d.size = 4 << 20
		}
		if d.size == 0 {
			return nil, paramErr1(key, "invalid format - disk size must be positive")
		}
		return d, nil
	}
	if d.cdrom && !strings.HasPrefix(rest, "iso/") {
		return nil, paramErr1(key, "invalid format - '%s' is not an ISO image volume", d.file)
	}
	return d, nil
}

// prepareChanges validates the config keys and delete/revert lists of an
// update (or create) and checks the caller's privileges for them: the
// per-key VM.Config.* privileges (updates only), Datastore privileges for
// disks and media, and SDN.Use for bridges.
func (c *call) prepareChanges(vmid int, current map[string]string, creating bool) ([]change, error) {
	var out []change
	vmPath := "/vms/" + strconv.Itoa(vmid)
	deletes := splitList(c.p.str("delete"))
	for _, k := range c.p.keys() {
		if !isConfigKey(k) {
			continue
		}
		if slices.Contains(deletes, k) {
			return nil, paramErr1("delete", "you can't use '-%s' and '-delete %s' at the same time", k, k)
		}
		ch, err := c.prepareKey(k, c.p.str(k))
		if err != nil {
			return nil, err
		}
		if !creating {
			if err := c.require(vmPath, privilegeFor(k, ch.value)); err != nil {
				return nil, err
			}
		}
		out = append(out, ch)
	}
	for _, k := range deletes {
		if !isConfigKey(k) {
			return nil, paramErr1("delete", "invalid configuration key '%s'", k)
		}
		if err := c.require(vmPath, privilegeFor(k, current[k])); err != nil {
			return nil, err
		}
		out = append(out, change{key: k, del: true})
	}
	return bootOrder(current, out)
}

func (c *call) prepareKey(k, val string) (change, error) {
	ch := change{key: k, value: val}
	switch {
	case reDrive.MatchString(k):
		d, err := parseDrive(k, val)
		if err != nil {
			return ch, err
		}
		ch.drive = d
		switch {
		case d.alloc:
			err = c.require("/storage/"+d.store, "Datastore.AllocateSpace")
		case d.store != "":
			err = c.requireAny("/storage/"+d.store, "Datastore.AllocateSpace", "Datastore.Audit")
		}
		return ch, err
	case reNet.MatchString(k):
		model, mac, opts := parseNet(val)
		if model == "" {
			return ch, paramErr1(k, "invalid format - missing model")
		}
		if mac != "" && !macRe.MatchString(mac) {
			return ch, paramErr1(k, "invalid format - value does not look like a valid MAC address")
		}
		for _, b := range []string{"firewall", "link_down"} {
			if opts[b] != "" {
				nb, err := normBool(k, opts[b])
				if err != nil {
					return ch, err
				}
				opts[b] = nb
			}
		}
		if t := opts["tag"]; t != "" {
			if n, err := strconv.Atoi(t); err != nil || n < 1 || n > 4094 {
				return ch, paramErr1(k, "invalid format - value '%s' for tag is not in range 1 - 4094", t)
			}
		}
		ch.net = true
		if br := opts["bridge"]; br != "" {
			path := c.s.bridgeACLPath(br, opts["tag"])
			if err := c.require(path, "SDN.Use"); err != nil {
				return ch, err
			}
		}
		return ch, nil
	}
	nv, err := normalizeValue(k, val)
	ch.value = nv
	return ch, err
}

// bridgeACLPath is the ACL path PVE checks SDN.Use on for a NIC:
// /sdn/zones/<zone>/<vnet>[/<tag>], the zone taken from the staged VNet
// config, "localnetwork" for plain bridges.
func (s *Server) bridgeACLPath(bridge, tag string) string {
	s.mu.Lock()
	zone := "localnetwork"
	if vn := s.sdn.staged[SDNVNets][bridge]; vn != nil {
		zone = vn["zone"]
	}
	s.mu.Unlock()
	p := "/sdn/zones/" + zone + "/" + bridge
	if tag != "" {
		p += "/" + tag
	}
	return p
}

// bootOrder rejects a boot order naming devices the config lacks, and
// drops deleted devices from the current order as qemu-server does.
func bootOrder(current map[string]string, changes []change) ([]change, error) {
	final := map[string]bool{}
	for k := range current {
		final[k] = true
	}
	boot, explicit := current["boot"], false
	for _, ch := range changes {
		final[ch.key] = !ch.del
		if ch.key == "boot" {
			boot, explicit = ch.value, true
			if ch.del {
				boot = ""
			}
		}
	}
	opts, _ := propString(boot, "legacy")
	if opts["order"] == "" {
		return changes, nil
	}
	var kept []string
	for dev := range strings.SplitSeq(opts["order"], ";") {
		switch {
		case dev == "" || final[dev]:
			kept = append(kept, dev)
		case explicit:
			return nil, paramErr1("boot", "invalid bootorder: device '%s' does not exist'", dev)
		}
	}
	if !explicit && len(kept) != len(strings.Split(opts["order"], ";")) {
		changes = append(changes, change{key: "boot", value: "order=" + strings.Join(kept, ";")})
	}
	return changes, nil
}

// applyChanges applies validated changes to v: new disks are allocated
// first (all or nothing), then each change goes to the config, or to the
// pending changes when the VM runs and the change is not hot-pluggable.
// The caller holds s.mu.
func (s *Server) applyChanges(v *vm, changes []change) error {
	var allocated []*volume
	final := make([]string, len(changes))
	for i, ch := range changes {
		final[i] = ch.value
		switch {
		case ch.drive != nil && ch.drive.alloc:
			st, err := s.storageOn(v.node, ch.drive.store)
			var vol *volume
			if err == nil {
				vol, err = s.allocDisk(st, v.node, v.vmid, ch.drive.size)
			}
			if err != nil {
				for _, a := range allocated {
					delete(s.volumes, volKey{a.node, a.volid})
				}
				return err
			}
			allocated = append(allocated, vol)
			opts := cloneMap(ch.drive.opts)
			opts["size"] = formatSize(ch.drive.size)
			final[i] = printDrive(vol.volid, opts)
		case ch.drive != nil && ch.drive.cdrom && ch.drive.store != "":
			if _, _, err := s.volumeIn(v.node, ch.drive.store, ch.drive.file); err != nil {
				return err
			}
			final[i] = printDrive(ch.drive.file, ch.drive.opts)
		case ch.drive != nil:
			final[i] = printDrive(ch.drive.file, ch.drive.opts)
		case ch.net:
			model, mac, opts := parseNet(ch.value)
			if mac == "" {
				mac = s.newMAC()
			}
			final[i] = printNet(model, strings.ToUpper(mac), opts)
		}
	}
	for i, ch := range changes {
		s.applyOne(v, ch, final[i])
	}
	return nil
}

func (s *Server) applyOne(v *vm, ch change, val string) {
	k := ch.key
	if v.running && !hotpluggable(k, val, ch.del) {
		if ch.del {
			v.pendingDel[k] = true
			delete(v.pending, k)
		} else {
			v.pending[k] = val
			delete(v.pendingDel, k)
		}
		return
	}
	old, had := v.conf[k]
	delete(v.pending, k)
	delete(v.pendingDel, k)
	if ch.del {
		delete(v.conf, k)
	} else {
		v.conf[k] = val
	}
	if !had {
		return
	}
	oldVols := driveVolumes(map[string]string{k: old}, false)
	if len(oldVols) == 0 || slices.Contains(driveVolumes(map[string]string{k: val}, false), oldVols[0]) {
		return
	}
	if reUnused.MatchString(k) {
		s.freeVolume(v.node, oldVols[0])
		return
	}
	// A detached disk becomes an unused volume, as in PVE.
	for n := 0; ; n++ {
		u := "unused" + strconv.Itoa(n)
		if _, taken := v.conf[u]; !taken {
			v.conf[u] = oldVols[0]
			return
		}
	}
}

// freeVolume deletes a volume of the VM's storages. The caller holds s.mu.
func (s *Server) freeVolume(node, volid string) {
	id, _, _ := strings.Cut(volid, ":")
	if st := s.storages[id]; st != nil {
		delete(s.volumes, volKey{st.scope(node), volid})
	}
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

// typedConfig renders a config map with PVE's JSON types.
func typedConfig(m map[string]string) map[string]any {
	return typed(m, qemuIsNumeric)
}

// lockErr is qemu-server's answer for a locked VM.
func lockErr(v *vm) error {
	return fail("VM is locked (%s)", v.lock)
}

// vmAt returns the VM if it lives on node; the caller holds s.mu.
func (s *Server) vmAt(node string, vmid int) (*vm, error) {
	v := s.vms[vmid]
	if v == nil || v.node != node {
		return nil, configMissing(node, vmid)
	}
	return v, nil
}

func pathVMID(c *call) (int, error) {
	id, err := strconv.Atoi(c.path["vmid"])
	if err != nil || id < 1 {
		return 0, paramErr1("vmid", "type check ('integer') failed - got '%s'", c.path["vmid"])
	}
	return id, nil
}

// vmid returns the VM id of the path after checking priv on /vms/<vmid>.
func (c *call) vmid(priv string) (int, error) {
	vmid, err := pathVMID(c)
	if err != nil {
		return 0, err
	}
	if err := c.require("/vms/"+strconv.Itoa(vmid), priv); err != nil {
		return 0, err
	}
	return vmid, nil
}

// emit queues a VM event. The caller holds s.mu.
func (s *Server) emit(kind EventKind, v *vm) {
	s.events.push(Event{Kind: kind, VMID: v.vmid, Node: v.node, Name: v.conf["name"]})
}
