package proxmox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// targets are the inventory's machines as VMs to work on.
func targets(inv *provider.Inventory) ([]vmTarget, error) {
	out := make([]vmTarget, len(inv.Machines))
	var errs []error
	for i, m := range inv.Machines {
		node, vmid, err := vmRef(m)
		errs = append(errs, err)
		out[i] = vmTarget{host: m.Hostname, node: node, vmid: vmid}
	}
	return out, errors.Join(errs...)
}

// ReconcileMachines deletes the unused second VMs of a name the
// inventory found (deleteDups), keeps each owned VM's firewall and config (sizing:
// cores and memory pending until the next restart, disk growth; NICs
// still carrying mtu= on stopped VMs), then starts the stopped VMs, which
// applies their pending sizing (through plan), at most
// provider.MaxConcurrent VMs at a time.
func (c *Cloud) ReconcileMachines(ctx context.Context, inv *provider.Inventory, plan *provider.Plan) error {
	cluster := c.cluster
	vms, err := targets(inv)
	if err != nil {
		return err
	}
	if err := c.deleteDups(ctx, plan); err != nil {
		return err
	}
	errs := provider.FanOut(ctx, len(vms), func(ctx context.Context, i int) error {
		if err := c.reconcileFirewall(ctx, cluster, vms[i], false, plan); err != nil {
			return fmt.Errorf("VM %s: %w", vms[i].host, err)
		}
		return nil
	})
	stage(ctx, errs, func(ctx context.Context, i int) error {
		if err := c.reconcileConfig(ctx, cluster, vms[i], inv.Machines[i], plan); err != nil {
			return fmt.Errorf("VM %s: %w", vms[i].host, err)
		}
		return nil
	})
	stage(ctx, errs, func(ctx context.Context, i int) error {
		if inv.Machines[i].Status != "stopped" {
			return nil
		}
		return c.startVM(ctx, vms[i], "start the stopped VM", plan)
	})
	return errors.Join(errs...)
}

// FinalizeMachines detaches the boot cdrom (ide2) and detaches (ide3) and
// deletes the cidata ISO of every owned VM that still has them (reference
// §3.1 step 15), with one storage listing per node.
func (c *Cloud) FinalizeMachines(ctx context.Context, inv *provider.Inventory, plan *provider.Plan) error {
	cluster := c.cluster
	vms, err := targets(inv)
	if err != nil {
		return err
	}
	var nodes []string
	for _, vm := range vms {
		if !slices.Contains(nodes, vm.node) {
			nodes = append(nodes, vm.node)
		}
	}
	isos := make([][]string, len(nodes))
	errs := provider.FanOut(ctx, len(nodes), func(ctx context.Context, i int) error {
		var err error
		isos[i], err = c.listISOs(ctx, cluster, nodes[i])
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	errs = provider.FanOut(ctx, len(vms), func(ctx context.Context, i int) error {
		return c.finalizeVM(ctx, cluster, plan, vms[i], isos[slices.Index(nodes, vms[i].node)])
	})
	return errors.Join(errs...)
}

// finalizeVM detaches the boot cdrom and the cidata ISO of one VM and
// deletes the ISO when its node's storage (nodeISOs) still holds it.
func (c *Cloud) finalizeVM(ctx context.Context, cluster *config.Cluster, plan *provider.Plan, vm vmTarget, nodeISOs []string) error {
	conf, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
	if err != nil {
		return err
	}
	volid := cidataVolID(cluster, vm.host)
	var detach []string
	if m := conf["ide2"]; m != "" && !strings.HasPrefix(m, "none,") {
		detach = append(detach, "ide2")
	}
	if strings.HasPrefix(conf["ide3"], volid) {
		detach = append(detach, "ide3")
	}
	stored := slices.Contains(nodeISOs, volid)
	if len(detach) == 0 && !stored {
		return nil
	}
	var detail []string
	if len(detach) > 0 {
		detail = append(detail, "detach "+strings.Join(detach, ", "))
	}
	if stored {
		detail = append(detail, "delete "+volid)
	}
	change := state.Change{Action: state.ActionDelete, Kind: KindCidata, Name: vm.host, Detail: strings.Join(detail, " and ")}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		if len(detach) > 0 {
			if err := c.putConfig(ctx, vm, map[string]string{"delete": strings.Join(detach, ",")}); err != nil {
				return fmt.Errorf("detach %s: %w", strings.Join(detach, ", "), err)
			}
		}
		if !stored {
			return nil
		}
		return c.deleteCidata(ctx, cluster, vm.node, vm.host)
	})
}

// listISOs lists the ISO volumes of cidata_storage on node.
func (c *Cloud) listISOs(ctx context.Context, cluster *config.Cluster, node string) ([]string, error) {
	st := cidataStorage(cluster)
	isos, err := c.storageISOs(ctx, node, st)
	if err != nil {
		return nil, fmt.Errorf("list the ISOs of %s on %s (proxmox.cidata_storage): %w", st, node, err)
	}
	return isos, nil
}
