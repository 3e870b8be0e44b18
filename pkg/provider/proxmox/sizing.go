package proxmox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// TagPendingResize marks a VM whose boot disk grew since its last Proxmox
// restart (reference §5.3): the resize itself leaves no pending entry in
// the config, so the tag is what lets a later --reboot find it. It is
// cleared by RestartMachine.
const TagPendingResize = "taloscluster-pending-resize"

// sizing is a VM's cores, memory (MB) and boot disk (GB).
type sizing struct {
	cores, memoryMB, diskGB int
}

// sizingOf reads the sizing of a VM config, with Proxmox's defaults for
// absent keys (1 core, 512 MB).
func sizingOf(conf map[string]string) sizing {
	s := sizing{cores: 1, memoryMB: 512}
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		s.cores = n
	}
	mem := conf["memory"]
	if strings.Contains(mem, "=") {
		mem = option(mem, "current")
	}
	if n, err := strconv.Atoi(mem); err == nil {
		s.memoryMB = n
	}
	_, s.diskGB = driveOf(conf["scsi0"])
	return s
}

// desiredSizing is the sizing of pool.
func desiredSizing(pool config.Pool) sizing {
	return sizing{cores: pool.Cores, memoryMB: pool.Memory * 1024, diskGB: pool.Disk}
}

// memory renders MB as cluster.yaml counts it, in GB, when it is whole.
func memory(mb int) string {
	if mb%1024 == 0 {
		return fmt.Sprintf("%d GB", mb/1024)
	}
	return fmt.Sprintf("%d MB", mb)
}

// hasTag reports whether a VM config carries tag.
func hasTag(conf map[string]string, tag string) bool {
	return slices.Contains(splitTags(conf["tags"]), tag)
}

// withTag is the VM's tag list with tag added (add) or removed.
func withTag(conf map[string]string, tag string, add bool) string {
	tags := slices.DeleteFunc(splitTags(conf["tags"]), func(t string) bool { return t == tag })
	if add {
		tags = append(tags, tag)
	}
	return strings.Join(tags, ";")
}

// reconcileSizing makes a VM's cores, memory and disk the pool's (through
// plan, one change per VM). Cores and memory are written to the config,
// where Proxmox keeps them pending until the next restart of a running
// VM; a grown disk is resized at once and, on a running VM, tagged
// TagPendingResize so the restart it needs is found later (a stopped VM
// loses the tag: its start applies everything). A smaller
// disk is left alone (ValidateMachines refuses it); a machine whose pool
// is no longer in cluster.yaml too.
func (c *Cloud) reconcileSizing(ctx context.Context, cluster *config.Cluster, vm vmTarget, m provider.Machine, plan *provider.Plan) error {
	pool, _, ok := cluster.PoolOf(m.Pool)
	if !ok {
		return nil
	}
	conf, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
	if err != nil {
		return err
	}
	have, want := sizingOf(conf), desiredSizing(pool)
	running := m.Status == "running"
	when := "at next start"
	if running {
		when = "at next restart"
	}
	var details []string
	body := map[string]string{}
	if have.cores != want.cores {
		body["cores"] = strconv.Itoa(want.cores)
		details = append(details, fmt.Sprintf("cores %d -> %d (%s)", have.cores, want.cores, when))
	}
	if have.memoryMB != want.memoryMB {
		body["memory"] = strconv.Itoa(want.memoryMB)
		details = append(details, fmt.Sprintf("memory %s -> %s (%s)", memory(have.memoryMB), memory(want.memoryMB), when))
	}
	grow := have.diskGB > 0 && want.diskGB > have.diskGB
	if grow {
		details = append(details, fmt.Sprintf("disk %d -> %d GB (%s)", have.diskGB, want.diskGB, when))
	}
	switch tagged := hasTag(conf, TagPendingResize); {
	case grow && running && !tagged:
		body["tags"] = withTag(conf, TagPendingResize, true)
	case !running && tagged:
		// The start ReconcileMachines plans next applies the grown disk.
		body["tags"] = withTag(conf, TagPendingResize, false)
		details = append(details, "disk resize applied at start")
	}
	if len(details) == 0 {
		return nil
	}
	change := state.Change{Action: state.ActionUpdate, Kind: KindVM, Name: vm.host, Detail: strings.Join(details, ", ")}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		// The tag goes first: a resize that fails after it leaves only a
		// harmless extra restart, a tag that fails after the resize would
		// lose the restart the disk needs.
		if len(body) > 0 {
			if err := c.client.Put(ctx, vmPath(vm.node, vm.vmid)+"/config", body, nil); err != nil {
				return fmt.Errorf("update the config of VM %d: %w", vm.vmid, err)
			}
		}
		if grow {
			return c.resizeDisk(ctx, vm, want.diskGB)
		}
		return nil
	})
}

// resizeDisk grows scsi0 to gb and waits for the task (Proxmox answers
// with a task id, or nothing on older versions).
func (c *Cloud) resizeDisk(ctx context.Context, vm vmTarget, gb int) error {
	what := fmt.Sprintf("resize scsi0 of VM %d on %s to %d GB", vm.vmid, vm.node, gb)
	var upid goproxmox.UPID
	if err := c.client.Put(ctx, vmPath(vm.node, vm.vmid)+"/resize", map[string]string{"disk": "scsi0", "size": fmt.Sprintf("%dG", gb)}, &upid); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if upid == "" {
		return nil
	}
	return c.wait(ctx, what, goproxmox.NewTask(upid, c.client))
}

// PendingRestart lists the running owned VMs whose sizing waits for a
// Proxmox restart: cores or memory pending (the config differs from
// config?current=1, what the VM runs with), the TagPendingResize tag, or,
// for a plan that has not written them yet, cores, memory or disk growth
// that ReconcileMachines is about to make. Stopped VMs need none: the
// start that ReconcileMachines plans applies everything.
func (c *Cloud) PendingRestart(ctx context.Context, cluster *config.Cluster, inv *provider.Inventory) ([]string, error) {
	vms, err := targets(inv)
	if err != nil {
		return nil, err
	}
	pending := make([]bool, len(vms))
	errs := provider.FanOut(ctx, len(vms), func(ctx context.Context, i int) error {
		if inv.Machines[i].Status != "running" {
			return nil
		}
		vm := vms[i]
		eff, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
		if err != nil {
			return err
		}
		cur, err := c.readConfigView(ctx, vm.host, vm.node, vm.vmid, true)
		if err != nil {
			return err
		}
		running, next := sizingOf(cur), sizingOf(eff)
		pending[i] = running.cores != next.cores || running.memoryMB != next.memoryMB || hasTag(eff, TagPendingResize)
		if pool, _, ok := cluster.PoolOf(inv.Machines[i].Pool); ok && !pending[i] {
			want := desiredSizing(pool)
			pending[i] = running.cores != want.cores || running.memoryMB != want.memoryMB || (next.diskGB > 0 && want.diskGB > next.diskGB)
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []string
	for i, p := range pending {
		if p {
			out = append(out, vms[i].host)
		}
	}
	return out, nil
}

// RestartMachine restarts a VM through the Proxmox reboot API (an ACPI
// shutdown and a start, which applies the pending config; a guest reboot
// would not), or starts it when it is stopped, and then clears its
// TagPendingResize tag, through plan.
func (c *Cloud) RestartMachine(ctx context.Context, _ *config.Cluster, m provider.Machine, plan *provider.Plan) error {
	node, vmid, err := vmRef(m)
	if err != nil {
		return err
	}
	vm := vmTarget{host: m.Hostname, node: node, vmid: vmid}
	change := state.Change{Action: state.ActionUpdate, Kind: KindVM, Name: vm.host, Detail: "restart to apply pending sizing"}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		var status struct {
			Status string `json:"status"`
		}
		if err := c.client.Get(ctx, vmPath(vm.node, vm.vmid)+"/status/current", &status); err != nil {
			return fmt.Errorf("read the status of VM %d on %s: %w", vm.vmid, vm.node, err)
		}
		op := "reboot"
		if status.Status != "running" {
			op = "start"
		}
		if err := c.power(ctx, vm, op); err != nil {
			return err
		}
		conf, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
		if err != nil || !hasTag(conf, TagPendingResize) {
			return err
		}
		if err := c.client.Put(ctx, vmPath(vm.node, vm.vmid)+"/config", map[string]string{"tags": withTag(conf, TagPendingResize, false)}, nil); err != nil {
			return fmt.Errorf("clear the %s tag of VM %d: %w", TagPendingResize, vmid, err)
		}
		return nil
	})
}
