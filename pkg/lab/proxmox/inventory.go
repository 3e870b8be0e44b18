package proxmox

import (
	"cmp"
	"slices"
)

// Inventory is a copy of everything the lab's Proxmox holds that a client
// can create or delete: every VM (with its config and firewall), every
// volume on every storage of every node, the pools, the SDN objects
// (staged and committed) and the datacenter firewall options. Tests diff
// two of them to see exactly what a run changed.
type Inventory struct {
	VMs        []VMInfo
	Volumes    []VolumeInfo // by storage, node and volume id
	Pools      map[string]PoolInfo
	StagedSDN  map[SDNKind]map[string]map[string]string
	RunningSDN map[SDNKind]map[string]map[string]string
	Firewall   map[string]string
}

// Inventory returns a copy of every object.
func (s *Server) Inventory() Inventory {
	inv := Inventory{VMs: s.VMs(), Pools: s.Pools(), StagedSDN: map[SDNKind]map[string]map[string]string{}, RunningSDN: map[SDNKind]map[string]map[string]string{}}
	for _, k := range sdnKinds {
		inv.StagedSDN[k], inv.RunningSDN[k] = s.SDNObjects(k, false), s.SDNObjects(k, true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inv.Firewall = cloneMap(s.fwCluster)
	for _, v := range s.volumes {
		inv.Volumes = append(inv.Volumes, VolumeInfo{Storage: v.storage, Node: v.node, VolID: v.volid, Content: v.content, Size: v.size, VMID: v.vmid})
	}
	slices.SortFunc(inv.Volumes, func(a, b VolumeInfo) int {
		return cmp.Or(cmp.Compare(a.Storage, b.Storage), cmp.Compare(a.Node, b.Node), cmp.Compare(a.VolID, b.VolID))
	})
	return inv
}
