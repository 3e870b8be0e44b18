package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// DeleteMachine is provider.Compute.DeleteMachine: it re-reads the
// cluster's pool and finds m's VMID among its owned members (refusing a
// VM of that VMID that is not owned, or renamed since the inventory), then
// deletes the VM as DestroyMachines does, on the node it runs on now: a
// hard stop (the node was reset), a purging delete that destroys its
// disks (Proxmox removes the VM's firewall with it), and its cidata ISO.
// A VM already gone leaves at most its cidata ISO to delete.
func (c *Cloud) DeleteMachine(ctx context.Context, m provider.Machine, plan *provider.Plan) error {
	cluster := c.cluster
	vm, found, err := c.ownedVM(ctx, cluster, m)
	if err != nil {
		return fmt.Errorf("delete VM %s: %w", m.Hostname, err)
	}
	if found {
		return c.deleteVM(ctx, cluster, vm, plan)
	}
	isos, err := c.listISOs(ctx, cluster, vm.node)
	if err != nil {
		return fmt.Errorf("delete VM %s: %w", m.Hostname, err)
	}
	volid := cidataVolID(cluster, m.Hostname)
	if !slices.Contains(isos, volid) {
		return nil
	}
	change := state.Change{Action: state.ActionDelete, Kind: KindCidata, Name: m.Hostname, Detail: "delete " + volid}
	return plan.Do(ctx, change, func(ctx context.Context) error { return c.deleteCidata(ctx, cluster, vm.node, m.Hostname) })
}

// ownedVM proves m's VM owned (reference I-F1): its VMID is a member of
// the cluster's pool carrying the cluster's tags and m's name. The target
// is on the node the pool lists it on, or m's when found is false: no VM
// has that VMID any more. A VM of that VMID that is not owned is refused.
func (c *Cloud) ownedVM(ctx context.Context, cluster *config.Cluster, m provider.Machine) (vmTarget, bool, error) {
	node, vmid, err := vmRef(m)
	if err != nil {
		return vmTarget{}, false, err
	}
	owned, err := c.ownedVMs(ctx, cluster.Name)
	if err != nil {
		return vmTarget{}, false, err
	}
	if i := slices.IndexFunc(owned, func(r vmResource) bool { return r.VMID == vmid }); i >= 0 {
		if r := owned[i]; r.Name != m.Hostname {
			return vmTarget{}, false, fmt.Errorf("refusing to delete VM %d: it is named %s now, not %s; rerun to read the inventory again", vmid, r.Name, m.Hostname)
		}
		return vmTarget{host: m.Hostname, node: owned[i].Node, vmid: vmid}, true, nil
	}
	var all []vmResource
	if err := c.client.Get(ctx, "/cluster/resources?type=vm", &all); err != nil {
		return vmTarget{}, false, fmt.Errorf("list the cluster's VMs: %w", err)
	}
	if i := slices.IndexFunc(all, func(r vmResource) bool { return r.VMID == vmid }); i >= 0 {
		return vmTarget{}, false, fmt.Errorf("refusing to delete VM %s (VMID %d on %s): it is not a member of pool %s carrying the tags %s and cluster_%s",
			all[i].Name, vmid, all[i].Node, PoolID(cluster.Name), TagManaged, strings.ToLower(cluster.Name))
	}
	return vmTarget{host: m.Hostname, node: node, vmid: vmid}, false, nil
}

// DestroyMachines deletes every owned VM (stopping it first) with its
// cidata ISO, at most provider.MaxConcurrent at a time, then the pool when nothing
// else is left in it.
func (c *Cloud) DestroyMachines(ctx context.Context, inv *provider.Inventory, plan *provider.Plan) error {
	cluster := c.cluster
	vms, err := targets(inv)
	if err != nil {
		return err
	}
	errs := provider.FanOut(ctx, len(vms), func(ctx context.Context, i int) error { return c.deleteVM(ctx, cluster, vms[i], plan) })
	if err := errors.Join(append(errs, c.deleteDups(ctx, plan))...); err != nil {
		return err
	}
	return c.deletePool(ctx, cluster, vms, plan)
}

// deleteVM deletes one VM with everything of its own (destroyVM) as one
// change through plan.
func (c *Cloud) deleteVM(ctx context.Context, cluster *config.Cluster, vm vmTarget, plan *provider.Plan) error {
	change := state.Change{Action: state.ActionDelete, Kind: KindVM, Name: vm.host, Detail: fmt.Sprintf("VMID %d on %s, its disks, firewall and cidata ISO", vm.vmid, vm.node)}
	return plan.Do(ctx, change, func(ctx context.Context) error { return c.destroyVM(ctx, cluster, vm) })
}

// destroyVM stops the VM if it runs, deletes it and removes its cidata
// ISO; a VM already gone only loses its ISO.
func (c *Cloud) destroyVM(ctx context.Context, cluster *config.Cluster, vm vmTarget) error {
	if err := c.removeVM(ctx, vm); err != nil {
		return err
	}
	return c.deleteCidata(ctx, cluster, vm.node, vm.host)
}

// removeVM stops the VM if it runs and deletes it with its disks; a VM
// already gone is done.
func (c *Cloud) removeVM(ctx context.Context, vm vmTarget) error {
	status, err := c.vmStatus(ctx, vm)
	switch {
	case isMissing(err):
		return nil
	case err != nil:
		return err
	case status == "running":
		if err := c.power(ctx, vm, "stop"); err != nil {
			return err
		}
	}
	defer c.configs.forget(vm.node, vm.vmid)
	what := fmt.Sprintf("delete VM %d on %s", vm.vmid, vm.node)
	// A delete whose answer was lost is judged by the VM being gone once
	// the destroy task it may have started has ended.
	started := false // a task's error names the call already
	err = c.settle(ctx, what, func(ctx context.Context) error {
		var upid goproxmox.UPID
		started = false
		if err := c.client.Delete(ctx, vmPath(vm.node, vm.vmid)+"?purge=1&destroy-unreferenced-disks=1", &upid); err != nil {
			return err
		}
		started = true
		return c.wait(ctx, what, goproxmox.NewTask(upid, c.client))
	}, func(ctx context.Context) (bool, error) {
		if err := c.awaitTasks(ctx, vm.node, "qmdestroy", strconv.Itoa(vm.vmid)); err != nil {
			return false, err
		}
		_, found, err := c.vmConf(ctx, vm.node, vm.vmid)
		return !found && err == nil, err
	})
	if err != nil && !started {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// deletePool deletes the cluster's pool (through plan) once no VM is left
// in it; otherwise it keeps the pool and says why. A dry run deleted
// nothing, so the VMs it planned to delete do not count; a real run counts
// every member still listed, its own deletes included, rather than trust
// that Proxmox took them out of the pool (the one mode read in provider
// code: what the pool holds is decided by the mode, not by a change).
func (c *Cloud) deletePool(ctx context.Context, cluster *config.Cluster, deleted []vmTarget, plan *provider.Plan) error {
	p, err := c.ownedPool(ctx, cluster.Name)
	if err != nil || p == nil {
		return err
	}
	var left []string
	for _, m := range p.Members {
		if !plan.DryRun || !slices.ContainsFunc(deleted, func(vm vmTarget) bool { return vm.vmid == m.VMID }) {
			left = append(left, strconv.Itoa(m.VMID))
		}
	}
	if len(left) > 0 {
		c.opts.Logf("proxmox: keeping pool %s: it still holds VM(s) %s", p.PoolID, strings.Join(left, ", "))
		return nil
	}
	change := state.Change{Action: state.ActionDelete, Kind: KindPool, Name: p.PoolID}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		return c.settle(ctx, "delete pool "+p.PoolID, func(ctx context.Context) error {
			return c.client.Delete(ctx, "/pools?poolid="+url.QueryEscape(p.PoolID), nil)
		}, func(ctx context.Context) (bool, error) {
			left, err := c.ownedPool(ctx, cluster.Name)
			return left == nil && err == nil, err
		})
	})
}
