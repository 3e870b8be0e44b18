package proxmox

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/talosc/talosc/pkg/lab/inventory"
)

// volatileKeys are VM config keys Proxmox fills with fresh random or time
// values at creation: they say nothing about what a client asked for.
var volatileKeys = []string{"vmgenid", "smbios1", "meta"}

// diskVMID finds the VMID in a disk volume name ("vm-104-disk-0").
var diskVMID = regexp.MustCompile(`\b(vm|base)-(\d+)-`)

// Snapshot is the whole inventory of the lab's Proxmox cluster: every VM
// (config, pending changes, firewall options and rules), every volume on
// every storage (attached or not: ISOs, disks, imports), the pools, the
// SDN objects (staged and committed) and the datacenter firewall. Each
// object is one line free of ids (a VMID is replaced by the VM's name,
// volatile config values are left out), so the snapshots of two runs
// compare line by line.
func (s *Server) Snapshot() inventory.Snapshot {
	inv := s.Inventory()
	names := map[int]string{}
	for _, v := range inv.VMs {
		names[v.VMID] = v.Name
	}
	vmName := func(id int) string {
		if n, ok := names[id]; ok {
			return n
		}
		return "#" + strconv.Itoa(id) // a VM that is gone
	}
	idFree := func(val string) string {
		return diskVMID.ReplaceAllStringFunc(val, func(m string) string {
			sub := diskVMID.FindStringSubmatch(m)
			id, _ := strconv.Atoi(sub[2])
			return sub[1] + "-{" + vmName(id) + "}-"
		})
	}
	clean := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if !slices.Contains(volatileKeys, k) {
				out[k] = idFree(v)
			}
		}
		return out
	}
	var b inventory.Builder
	b.Add("datacenter-firewall", "", inventory.Map("options", inv.Firewall))
	for _, v := range inv.VMs {
		b.Add("vm", v.Name, inventory.A("node", v.Node), inventory.A("running", v.Running), inventory.A("lock", v.Lock),
			inventory.A("pool", v.Pool), inventory.Map("config", clean(v.Config)), inventory.Map("pending", clean(v.Pending)),
			inventory.List("pending-delete", v.PendingDelete))
		b.Add("vm-firewall", v.Name, inventory.Map("options", v.FirewallOptions))
		for _, r := range v.FirewallRules { // a rule more is a line more, wherever it went
			b.Add("vm-firewall-rule", v.Name, inventory.Map("rule", r))
		}
	}
	for _, v := range inv.Volumes {
		vm := ""
		if v.VMID != 0 {
			vm = vmName(v.VMID)
		}
		b.Add("volume", idFree(v.VolID), inventory.A("node", v.Node), inventory.A("content", v.Content),
			inventory.A("size", strconv.FormatUint(v.Size, 10)), inventory.A("vm", vm))
	}
	for _, id := range slices.Sorted(maps.Keys(inv.Pools)) {
		p := inv.Pools[id]
		var vms []string
		for _, vmid := range p.VMs {
			vms = append(vms, vmName(vmid))
		}
		b.Add("pool", id, inventory.A("comment", p.Comment), inventory.List("vms", vms), inventory.List("storage", p.Storage))
	}
	for _, kind := range sdnKinds {
		ids := slices.Collect(maps.Keys(inv.StagedSDN[kind]))
		for id := range inv.RunningSDN[kind] {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		for _, id := range ids {
			staged, running := inv.StagedSDN[kind][id], inv.RunningSDN[kind][id]
			b.Add("sdn-"+strings.TrimSuffix(string(kind), "s"), id, inventory.Map("staged", staged), inventory.Map("running", running))
		}
	}
	return b.Snapshot()
}
