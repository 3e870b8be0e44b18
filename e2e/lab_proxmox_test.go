package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// proxmox returns the lab's Proxmox VE, which the "lab" subcommands of
// this file drive and inspect.
func (s *scriptLab) proxmox(ts *testscript.TestScript) *proxmox.Server {
	if s.lab.Proxmox == nil {
		ts.Fatalf("this lab simulates no Proxmox (lab up proxmox)")
	}
	return s.lab.Proxmox
}

// waitVMs waits until the lab's Proxmox runs n VMs whose guest agent
// answers.
func (s *scriptLab) waitVMs(ts *testscript.TestScript, n int) {
	pve := s.proxmox(ts)
	up := func() int {
		got := 0
		for _, vm := range pve.VMs() {
			if vm.Running && vm.GuestAgent {
				got++
			}
		}
		return got
	}
	deadline := time.Now().Add(time.Minute)
	for up() < n {
		if time.Now().After(deadline) {
			ts.Fatalf("%d running VMs after a minute, want %d", up(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// token sets the ACL of the lab Proxmox's token ("lab token ...").
func (s *scriptLab) token(ts *testscript.TestScript, args []string) {
	pve := s.proxmox(ts)
	if len(args) == 1 && args[0] == "all" {
		ts.Check(pve.SetACL(proxmox.DefaultTokenID, []proxmox.ACL{{Path: "/", Privs: proxmox.AllPrivileges()}}))
		return
	}
	if len(args) == 0 {
		ts.Fatalf("usage: lab token PATH=PRIVS... | lab token all")
	}
	var acl []proxmox.ACL
	for _, a := range args {
		path, list, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(path, "/") {
			ts.Fatalf("lab token: %q is not PATH=PRIVS", a)
		}
		var privs []string
		for p := range strings.SplitSeq(list, ",") {
			switch {
			case p == "TalosCluster":
				privs = append(privs, proxmox.TalosClusterPrivileges()...)
			case strings.HasPrefix(p, "-"):
				privs = slices.DeleteFunc(privs, func(q string) bool { return q == p[1:] })
			case p != "":
				privs = append(privs, p)
			}
		}
		acl = append(acl, proxmox.ACL{Path: path, Privs: privs})
	}
	ts.Check(pve.SetACL(proxmox.DefaultTokenID, acl))
}

// sdn drives and checks the lab Proxmox's SDN ("lab sdn ...").
func (s *scriptLab) sdn(ts *testscript.TestScript, args []string) {
	pve := s.proxmox(ts)
	const usage = "usage: lab sdn stage KIND ID K=V... | delete KIND ID | revert KIND ID | pending N | pending KIND ID STATE | applied KIND ID [K=V...] | gone KIND ID"
	if len(args) == 2 && args[0] == "pending" {
		pending := sdnPending(pve)
		want(ts, "pending SDN objects", count(ts, args), len(pending), fmt.Sprint(pending))
		return
	}
	if len(args) < 3 {
		ts.Fatalf(usage)
	}
	kind, id := sdnKind(ts, args[1]), args[2]
	staged, inStaged := pve.SDNObjects(kind, false)[id]
	running, inRunning := pve.SDNObjects(kind, true)[id]
	switch {
	case args[0] == "stage" && len(args) > 3:
		props := map[string]string{}
		maps.Copy(props, staged)
		for k, v := range fields(ts, args[3:]) {
			if v == "" {
				delete(props, k)
			} else {
				props[k] = v
			}
		}
		ts.Check(pve.StageSDN(kind, id, props))
	case args[0] == "delete" && len(args) == 3:
		ts.Check(pve.UnstageSDN(kind, id))
	case args[0] == "revert" && len(args) == 3 && inRunning:
		ts.Check(pve.StageSDN(kind, id, running))
	case args[0] == "revert" && len(args) == 3:
		ts.Check(pve.UnstageSDN(kind, id))
	case args[0] == "pending" && len(args) == 4:
		if got := sdnPending(pve)[string(kind)+"/"+id]; got != args[3] {
			ts.Fatalf("SDN %s %s is pending %q, want %q (staged %v, running %v)", kind, id, got, args[3], staged, running)
		}
	case args[0] == "applied":
		if !inRunning || !inStaged || !maps.Equal(staged, running) {
			ts.Fatalf("SDN %s %s is not applied: staged %v, running %v", kind, id, staged, running)
		}
		for k, v := range fields(ts, args[3:]) {
			if running[k] != v {
				ts.Fatalf("SDN %s %s has %s=%q, want %q: %v", kind, id, k, running[k], v, running)
			}
		}
	case args[0] == "gone" && len(args) == 3:
		if inStaged || inRunning {
			ts.Fatalf("SDN %s %s exists: staged %v, running %v", kind, id, staged, running)
		}
	default:
		ts.Fatalf(usage)
	}
}

// sdnKind parses an SDN object kind.
func sdnKind(ts *testscript.TestScript, s string) proxmox.SDNKind {
	k := proxmox.SDNKind(s)
	switch k {
	case proxmox.SDNControllers, proxmox.SDNZones, proxmox.SDNVNets, proxmox.SDNSubnets:
		return k
	default:
		ts.Fatalf("%q is not an SDN kind (controllers, zones, vnets, subnets)", s)
		return ""
	}
}

// fields parses K=V arguments.
func fields(ts *testscript.TestScript, args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			ts.Fatalf("%q is not K=V", a)
		}
		out[k] = v
	}
	return out
}

// sdnPending maps every SDN object whose staged config differs from its
// running one ("KIND/ID") to its pending state, as PVE names it.
func sdnPending(pve *proxmox.Server) map[string]string {
	out := map[string]string{}
	for _, k := range []proxmox.SDNKind{proxmox.SDNControllers, proxmox.SDNZones, proxmox.SDNVNets, proxmox.SDNSubnets} {
		staged, running := pve.SDNObjects(k, false), pve.SDNObjects(k, true)
		for id, r := range running {
			st, ok := staged[id]
			switch {
			case !ok:
				out[string(k)+"/"+id] = "deleted"
			case !maps.Equal(st, r):
				out[string(k)+"/"+id] = "changed"
			}
		}
		for id := range staged {
			if _, ok := running[id]; !ok {
				out[string(k)+"/"+id] = "new"
			}
		}
	}
	return out
}

// vmNamed returns the lab Proxmox's VM called name.
func (s *scriptLab) vmNamed(ts *testscript.TestScript, name string) proxmox.VMInfo {
	var names []string
	for _, vm := range s.proxmox(ts).VMs() {
		if vm.Name == name {
			return vm
		}
		names = append(names, vm.Name)
	}
	ts.Fatalf("no Proxmox VM %s (have %v)", name, names)
	return proxmox.VMInfo{}
}

// vmConfig checks "[!] lab vm-config NAME KEY RE" and "lab vm-pending
// NAME N".
func (s *scriptLab) vmConfig(ts *testscript.TestScript, neg bool, args []string) {
	if args[0] == "vm-pending" {
		if len(args) < 2 {
			ts.Fatalf("usage: lab vm-pending NAME [KEY|-KEY...]")
		}
		vm := s.vmNamed(ts, args[1])
		keys := slices.Sorted(maps.Keys(vm.Pending))
		for _, k := range vm.PendingDelete {
			keys = append(keys, "-"+k)
		}
		slices.Sort(keys)
		if w := slices.Sorted(slices.Values(args[2:])); !slices.Equal(keys, w) {
			ts.Fatalf("VM %s has %v pending for its next restart, want %v (pending values %v)", args[1], keys, w, vm.Pending)
		}
		return
	}
	if len(args) != 4 {
		ts.Fatalf("usage: [!] lab vm-config NAME KEY RE")
	}
	vm := s.vmNamed(ts, args[1])
	conf := maps.Clone(vm.Config)
	maps.Copy(conf, vm.Pending)
	for _, k := range vm.PendingDelete {
		delete(conf, k)
	}
	re, err := regexp.Compile(args[3])
	ts.Check(err)
	if v, ok := conf[args[2]]; (ok && re.MatchString(v)) == neg {
		ts.Fatalf("VM %s has %s=%q (set: %v), want it %smatching %q", args[1], args[2], v, ok, map[bool]string{true: "not ", false: ""}[neg], args[3])
	}
}

// order checks "lab order TYPE NAME...".
func (s *scriptLab) order(ts *testscript.TestScript, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: lab order TYPE NAME...")
	}
	pve := s.proxmox(ts)
	names := map[string]string{}
	for _, vm := range pve.VMs() {
		names[strconv.Itoa(vm.VMID)] = vm.Name
	}
	var got []string
	for _, t := range pve.Tasks()[s.tasks:] {
		if t.Type == args[0] {
			got = append(got, cmp.Or(names[t.ID], "VM "+t.ID))
		}
	}
	if !slices.Equal(got, args[1:]) {
		ts.Fatalf("%s tasks since the mark were for %v, want %v", args[0], got, args[1:])
	}
}
