package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// pveObjects flattens the lab Proxmox's whole inventory into one line per
// object ("vm demo-worker-02", "volume local-lvm:vm-104-disk-0 of
// demo-worker-02", ...) mapped to its content, so that two inventories
// diff object by object. VMs, their firewalls and their volumes are named
// by the VM's name (names maps VMIDs of VMs gone since to theirs).
func pveObjects(inv proxmox.Inventory, names map[int]string) map[string]string {
	for _, vm := range inv.VMs {
		names[vm.VMID] = vm.Name
	}
	out := map[string]string{"datacenter-firewall": fmt.Sprint(inv.Firewall)}
	for _, vm := range inv.VMs {
		out["vm "+vm.Name] = fmt.Sprint(vm.VMID, vm.Node, vm.Running, vm.Lock, vm.Pool, vm.Config, vm.Pending, vm.PendingDelete, vm.Started)
		out["firewall "+vm.Name] = fmt.Sprint(vm.FirewallOptions, vm.FirewallRules)
	}
	for _, v := range inv.Volumes {
		key := "volume " + v.VolID
		if v.VMID != 0 {
			key += " of " + names[v.VMID]
		}
		out[key] = fmt.Sprint(v.Storage, v.Node, v.Content, v.Size)
	}
	for id, p := range inv.Pools {
		out["pool "+id] = fmt.Sprint(p)
	}
	for kind, objs := range inv.StagedSDN {
		for id, o := range objs {
			out[fmt.Sprintf("sdn %s/%s", kind, id)] = fmt.Sprint(o, inv.RunningSDN[kind][id])
		}
	}
	for kind, objs := range inv.RunningSDN {
		for id, o := range objs {
			if _, staged := inv.StagedSDN[kind][id]; !staged {
				out[fmt.Sprintf("sdn %s/%s", kind, id)] = fmt.Sprint(nil, o)
			}
		}
	}
	return out
}

// osObjects flattens the lab OpenStack's whole inventory, every project's
// and whatever carries no tag, into one line per object ("server
// demo-worker-02 <id>", "volume <id> of demo-worker-02", ...), so that a
// removal's diff shows exactly what went and an orphan or a duplicate
// shows up as an object more.
func osObjects(inv openstack.Inventory) map[string]string {
	out := map[string]string{}
	add := func(kind, name, id string) { out[strings.TrimSpace(kind+" "+name+" "+id)] = "" }
	names := map[string]string{}
	for _, x := range inv.Servers {
		names[x.ID] = x.Name
		add("server", x.Name, x.ID)
	}
	for _, x := range inv.Volumes {
		add("volume", x.ID, "of "+names[x.ServerID])
	}
	for _, x := range inv.Ports {
		add("port", x.Name, x.ID)
	}
	for _, x := range inv.Networks {
		add("network", x.Name, x.ID)
	}
	for _, x := range inv.Subnets {
		add("subnet", x.Name, x.ID)
	}
	for _, x := range inv.Routers {
		add("router", x.Name, x.ID)
	}
	for _, x := range inv.FloatingIPs {
		add("floatingip", x.FloatingIPAddress, x.ID)
	}
	for _, x := range inv.SecurityGroups {
		add("security-group", x.Name, x.ID)
	}
	for _, x := range inv.SecurityGroupRules {
		add("security-group-rule", x.ID, "")
	}
	for _, x := range inv.Images {
		add("image", x.Name, x.ID)
	}
	return out
}

// objects is the lab cloud's whole inventory as osObjects or pveObjects
// give it.
func (s *scriptLab) objects() map[string]string {
	if s.lab.OpenStack != nil {
		return osObjects(s.lab.OpenStack.Inventory())
	}
	if s.vmNames == nil {
		s.vmNames = map[int]string{}
	}
	return pveObjects(s.lab.Proxmox.Inventory(), s.vmNames)
}

// markInventory records the lab cloud's inventory for "lab inventory".
func (s *scriptLab) markInventory() {
	if s.lab.OpenStack != nil || s.lab.Proxmox != nil {
		s.inventory = s.objects()
	}
}

// inventoryChanges checks "lab inventory CHANGE...": the objects of the
// lab Proxmox's whole inventory that were added (+), removed (-) or
// changed (~) since the mark, each a line "+|-|~ OBJECT" (see
// pveObjects), are exactly those the regular expressions CHANGE... match:
// every change matches one of them, and each matches a change. Without
// CHANGE, nothing changed.
func (s *scriptLab) inventoryChanges(ts *testscript.TestScript, args []string) {
	if len(args) > 0 && (args[0] == "save" || args[0] == "diff" || args[0] == "expect") {
		s.wholeInventory(ts, args)
		return
	}
	if s.inventory == nil {
		ts.Fatalf("lab inventory: no inventory recorded (lab mark first)")
	}
	now := s.objects()
	var changes []string
	for k, v := range now {
		switch was, ok := s.inventory[k]; {
		case !ok:
			changes = append(changes, "+ "+k)
		case was != v:
			changes = append(changes, "~ "+k)
		}
	}
	for k := range s.inventory {
		if _, ok := now[k]; !ok {
			changes = append(changes, "- "+k)
		}
	}
	slices.Sort(changes)
	if unmatched, missing := matchChanges(ts, changes, args); len(unmatched) > 0 || len(missing) > 0 {
		ts.Fatalf("Proxmox inventory changes since the mark:\n  %s\nunexpected: %q; expected but not seen: %q",
			strings.Join(changes, "\n  "), unmatched, missing)
	}
}

// matchChanges matches changes against the regular expressions patterns
// (each anchored): the changes none matches, and the patterns that matched
// none.
func matchChanges(ts *testscript.TestScript, changes, patterns []string) (unmatched, missing []string) {
	res := make([]*regexp.Regexp, len(patterns))
	for i, a := range patterns {
		re, err := regexp.Compile("^(?:" + a + ")$")
		ts.Check(err)
		res[i] = re
	}
	matched := map[string]bool{}
	for _, c := range changes {
		hit := false
		for i, re := range res {
			if re.MatchString(c) {
				hit, matched[patterns[i]] = true, true
			}
		}
		if !hit {
			unmatched = append(unmatched, c)
		}
	}
	missing = slices.DeleteFunc(slices.Clone(patterns), func(a string) bool { return matched[a] })
	return unmatched, missing
}

// wholeInventory checks the lab cloud's whole inventory (see
// openstack.Cloud.Snapshot and proxmox.Server.Snapshot: every resource,
// tagged or not, one id-free line each):
//
//	lab inventory save NAME    remember it as NAME
//	lab inventory diff NAME [CHANGE...]
//	                           it is NAME's, line for line (the diff if
//	                           not); with CHANGE..., the lines of the diff
//	                           ("+ LINE" here only, "- LINE" there only)
//	                           are exactly those the regular expressions
//	                           CHANGE match
//	lab inventory expect FILE  it is FILE's (a golden text in the script
//	                           archive; lines starting with # are comments)
func (s *scriptLab) wholeInventory(ts *testscript.TestScript, args []string) {
	if len(args) < 2 || (args[0] != "diff" && len(args) != 2) {
		ts.Fatalf("usage: lab inventory save NAME | lab inventory diff NAME [CHANGE...] | lab inventory expect FILE")
	}
	var now inventory.Snapshot
	switch {
	case s.lab.OpenStack != nil:
		now = s.lab.OpenStack.Snapshot()
	case s.lab.Proxmox != nil:
		now = s.lab.Proxmox.Snapshot()
	default:
		ts.Fatalf("lab inventory %s: this lab simulates no cloud", args[0])
	}
	var was inventory.Snapshot
	switch args[0] {
	case "save":
		if s.saved == nil {
			s.saved = map[string]inventory.Snapshot{}
		}
		s.saved[args[1]] = now
		ts.Logf("inventory %s: %d resources", args[1], len(now))
		return
	case "diff":
		var ok bool
		if was, ok = s.saved[args[1]]; !ok {
			ts.Fatalf("lab inventory diff: no inventory saved as %q (lab inventory save %s first)", args[1], args[1])
		}
	case "expect":
		was = inventory.Parse(ts.ReadFile(args[1]))
	}
	diff := inventory.Diff(was, now)
	if unmatched, missing := matchChanges(ts, diff, args[2:]); len(unmatched) > 0 || len(missing) > 0 {
		ts.Fatalf("the whole inventory differs from %s (- there only, + here only):\n  %s\nunexpected: %q; expected but not seen: %q",
			args[1], strings.Join(diff, "\n  "), unmatched, missing)
	}
}
