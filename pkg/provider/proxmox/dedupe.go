package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// How a second VM of one name can appear: every attempt of one create
// sends the same VMID, so a create applied late and its repetition are
// one VM (Proxmox refuses a second at that VMID). But the next run
// allocates its VMID again (cluster/nextid), and a create of an earlier
// run that lands between that run's inventory and its allocation leaves
// two owned VMs of one name. The inventory keeps the one in use
// (provider.DedupeOwned) and records the other for ReconcileMachines or
// DestroyMachines to delete.

// lateDups are the owned VMs the inventory found to be unused second VMs
// of a name, by VMID.
type lateDups struct {
	mu  sync.Mutex
	vms map[int]vmTarget
}

func (d *lateDups) add(vm vmTarget) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vms == nil {
		d.vms = map[int]vmTarget{}
	}
	d.vms[vm.vmid] = vm
}

// take returns the recorded VMs, in VMID order, and forgets them.
func (d *lateDups) take() []vmTarget {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Collect(maps.Values(d.vms))
	slices.SortFunc(out, func(a, b vmTarget) int { return a.vmid - b.vmid })
	d.vms = nil
	return out
}

// dedupe returns owned (sorted by name) with one VM per name: of two or
// more, the one in use (running, or started once: vmUsed) is kept and the
// others are recorded in c.dups; two in use are refused, named.
func (c *Cloud) dedupe(ctx context.Context, owned []vmResource) ([]vmResource, error) {
	byName := map[string][]vmResource{}
	for _, r := range owned {
		byName[r.Name] = append(byName[r.Name], r)
	}
	var out []vmResource
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		vms := byName[name]
		slices.SortFunc(vms, func(a, b vmResource) int { return a.VMID - b.VMID })
		if len(vms) == 1 {
			out = append(out, vms[0])
			continue
		}
		dups := make([]provider.Duplicate[vmResource], len(vms))
		for i, r := range vms {
			dups[i] = provider.Duplicate[vmResource]{Item: r, ID: fmt.Sprintf("VMID %d on %s", r.VMID, r.Node), InUse: c.vmUsed(ctx, r)}
		}
		keep, drop, err := provider.DedupeOwned("Proxmox VM "+name, dups)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, keep)
		for _, r := range drop {
			c.opts.Logf("proxmox: VM %s: VMID %d on %s is a second VM of this name, stopped and never started (a create applied late): it is deleted, VMID %d is kept", name, r.VMID, r.Node, keep.VMID)
			c.dups.add(vmTarget{host: name, node: r.Node, vmid: r.VMID})
		}
	}
	return out, errors.Join(errs...)
}

// vmUsed reports whether a VM is in use: running, or started at least
// once (a qmstart task in its node's task index). A VM whose use cannot
// be read counts as used.
func (c *Cloud) vmUsed(ctx context.Context, r vmResource) bool {
	if r.Status != "stopped" {
		return true
	}
	q := url.Values{"typefilter": {"qmstart"}, "vmid": {strconv.Itoa(r.VMID)}, "limit": {"1"}}
	var tasks []activeTask
	err := c.client.Get(ctx, "/nodes/"+url.PathEscape(r.Node)+"/tasks?"+q.Encode(), &tasks)
	return err != nil || len(tasks) > 0
}

// deleteDups deletes (through plan) the unused second VMs the inventory
// recorded, without their cidata ISO: the VM kept boots from it.
func (c *Cloud) deleteDups(ctx context.Context, plan *provider.Plan) error {
	var errs []error
	for _, vm := range c.dups.take() {
		change := state.Change{Action: state.ActionDelete, Kind: KindVM, Name: vm.host, Detail: fmt.Sprintf("VMID %d on %s: a second VM of this name, never started", vm.vmid, vm.node)}
		errs = append(errs, plan.Do(ctx, change, func(ctx context.Context) error { return c.removeVM(ctx, vm) }))
	}
	return errors.Join(errs...)
}
