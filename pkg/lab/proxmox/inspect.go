package proxmox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// VMInfo is a VM as the lab sees it (for tests and `talosc-lab status`).
type VMInfo struct {
	VMID    int
	Node    string
	Name    string
	Running bool
	Lock    string
	Pool    string
	// Config is the current (running) config; Pending the changes the next
	// restart applies and PendingDelete the keys it removes.
	Config        map[string]string
	Pending       map[string]string
	PendingDelete []string
	// CDROMs are the ISO volumes attached as CD-ROM media (current config).
	CDROMs []string
	// FirewallOptions and FirewallRules are the VM's firewall.
	FirewallOptions map[string]string
	FirewallRules   []map[string]string
	// GuestAgent reports whether the guest agent answers.
	GuestAgent bool
	Started    time.Time
}

func (s *Server) vmInfo(v *vm) VMInfo {
	info := VMInfo{
		VMID: v.vmid, Node: v.node, Name: v.conf["name"], Running: v.running, Lock: v.lock, Pool: s.poolOf(v.vmid),
		Config: cloneMap(v.conf), Pending: cloneMap(v.pending), PendingDelete: sortedKeys(v.pendingDel),
		CDROMs: driveVolumes(v.conf, true), FirewallOptions: cloneMap(v.fwOptions), GuestAgent: v.running && v.agentUp,
	}
	if v.running {
		info.Started = v.started
	}
	for _, r := range v.fwRules {
		info.FirewallRules = append(info.FirewallRules, cloneMap(r))
	}
	return info
}

// VMs lists every VM, by VMID.
func (s *Server) VMs() []VMInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []VMInfo
	for _, id := range sortedVMIDs(s.vms) {
		out = append(out, s.vmInfo(s.vms[id]))
	}
	return out
}

// VM returns one VM.
func (s *Server) VM(vmid int) (VMInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vms[vmid]
	if v == nil {
		return VMInfo{}, false
	}
	return s.vmInfo(v), true
}

// VolumeInfo is one volume on a storage.
type VolumeInfo struct {
	Storage string
	// Node is "" on shared storages.
	Node    string
	VolID   string
	Content string
	Size    uint64
	VMID    int
}

// Volumes lists the volumes of a storage as node sees it ("" storage: all).
func (s *Server) Volumes(node, storageID string) []VolumeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []VolumeInfo
	for k, v := range s.volumes {
		st := s.storages[v.storage]
		if (storageID != "" && v.storage != storageID) || k.scope != st.scope(node) {
			continue
		}
		out = append(out, VolumeInfo{Storage: v.storage, Node: v.node, VolID: v.volid, Content: v.content, Size: v.size, VMID: v.vmid})
	}
	slices.SortFunc(out, func(a, b VolumeInfo) int { return strings.Compare(a.VolID, b.VolID) })
	return out
}

// Volume returns the bytes of an uploaded or downloaded file (ISO,
// template, import) as node sees it.
func (s *Server) Volume(node, volid string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _, _ := strings.Cut(volid, ":")
	st := s.storages[id]
	if st == nil {
		return nil, false
	}
	v := s.volumes[volKey{st.scope(node), volid}]
	if v == nil || v.data == nil {
		return nil, false
	}
	return slices.Clone(v.data), true
}

// CidataISO returns the NoCloud ISO attached to the VM (the CD-ROM whose
// volume label is "cidata"), its volume id and its content: the machine
// config the VM boots from.
func (s *Server) CidataISO(vmid int) (string, NoCloud, error) {
	info, ok := s.VM(vmid)
	if !ok {
		return "", NoCloud{}, fmt.Errorf("no VM %d", vmid)
	}
	for _, volid := range info.CDROMs {
		data, ok := s.Volume(info.Node, volid)
		if !ok {
			continue
		}
		nc, err := ReadNoCloud(data)
		if err == nil && nc.IsCidata() {
			return volid, nc, nil
		}
	}
	return "", NoCloud{}, fmt.Errorf("VM %d has no cidata ISO attached", vmid)
}

// CidataReferences maps each ISO volume with a cidata label to the VMs
// whose config (current or pending) references it.
func (s *Server) CidataReferences() map[string][]int {
	out := map[string][]int{}
	for _, info := range s.VMs() {
		all := cloneMap(info.Config)
		maps.Copy(all, info.Pending)
		for _, volid := range driveVolumes(all, true) {
			data, ok := s.Volume(info.Node, volid)
			if !ok {
				continue
			}
			if nc, err := ReadNoCloud(data); err == nil && nc.IsCidata() && !slices.Contains(out[volid], info.VMID) {
				out[volid] = append(out[volid], info.VMID)
			}
		}
	}
	return out
}

// TaskInfo is one task as the lab recorded it.
type TaskInfo struct {
	UPID, Node, Type, ID, User string
	Running                    bool
	ExitStatus                 string
	Log                        []string
}

// Tasks lists every task, oldest first.
func (s *Server) Tasks() []TaskInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskInfo, 0, len(s.taskList))
	for _, t := range s.taskList {
		out = append(out, TaskInfo{UPID: t.upid, Node: t.node, Type: t.typ, ID: t.id, User: t.user, Running: t.running, ExitStatus: t.exit, Log: slices.Clone(t.log)})
	}
	return out
}

// PoolInfo is one resource pool.
type PoolInfo struct {
	Comment string
	VMs     []int
	Storage []string
}

// Pools returns every pool by id.
func (s *Server) Pools() map[string]PoolInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]PoolInfo{}
	for id, p := range s.pools {
		out[id] = PoolInfo{Comment: p.comment, VMs: slices.Clone(p.vms), Storage: slices.Clone(p.storage)}
	}
	return out
}

// SDNObjects returns the staged (running=false) or committed SDN objects
// of a kind, by id.
func (s *Server) SDNObjects(kind SDNKind, running bool) map[string]map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.sdn.staged
	if running {
		src = s.sdn.running
	}
	out := map[string]map[string]string{}
	for id, o := range src[kind] {
		out[id] = cloneMap(o)
	}
	return out
}

// DatacenterFirewall reports the datacenter firewall's enable switch.
func (s *Server) DatacenterFirewall() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fwCluster["enable"] == "1"
}
