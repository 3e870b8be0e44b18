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

// configUpdate is one planned update of a VM config: the PUT body, what
// it changes, and the size in GB to grow the disk to (0: none).
type configUpdate struct {
	body    map[string]string
	details []string
	growGB  int
}

// reconcileConfig keeps a VM's config (through plan, one change per VM):
// its sizing (sizing, below; none for a machine whose pool is no longer
// in cluster.yaml) and, on a stopped VM, NICs that still carry
// mtu= rewritten to inherit the bridge MTU. A running VM keeps such a NIC
// until its next --reboot (re-plugging a live NIC kills flannel's VXLAN):
// PendingRestart lists it and RestartMachine rewrites it. NICs without
// the Proxmox firewall are warned about.
func (c *Cloud) reconcileConfig(ctx context.Context, cluster *config.Cluster, vm vmTarget, m provider.Machine, plan *provider.Plan) error {
	conf, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
	if err != nil {
		return err
	}
	for _, k := range unfirewalledNICs(conf) {
		c.opts.Logf("warning: VM %s: NIC %s has no firewall=1, so the security allowlists are NOT enforced on it; turn the firewall on for that NIC (Hardware > Network Device > Firewall)",
			vm.host, k)
	}
	running := m.Status == "running"
	u := configUpdate{body: map[string]string{}}
	if pool, _, ok := cluster.PoolOf(m.Pool); ok {
		u.sizing(conf, desiredSizing(pool), running)
	}
	if m.Status == "stopped" {
		nics := nicsWithMTU(conf)
		for _, k := range sortedKeys(nics) {
			u.body[k] = nics[k]
			u.details = append(u.details, fmt.Sprintf("%s mtu=%s removed (inherits the bridge MTU)", k, option(conf[k], "mtu")))
		}
	}
	if len(u.details) == 0 {
		return nil
	}
	change := state.Change{Action: state.ActionUpdate, Kind: KindVM, Name: vm.host, Detail: strings.Join(u.details, ", ")}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		// The tag goes first: a resize that fails after it leaves only a
		// harmless extra restart, a tag that fails after the resize would
		// lose the restart the disk needs.
		if len(u.body) > 0 {
			if err := c.putConfig(ctx, vm, u.body); err != nil {
				return err
			}
		}
		if u.growGB > 0 {
			return c.resizeDisk(ctx, vm, u.growGB)
		}
		return nil
	})
}

// sizing adds the changes that give a VM's cores, memory and disk the
// sizes of want. Cores and memory are written to the config, where
// Proxmox keeps them pending until the next restart of a running VM; a
// grown disk is resized at once and, on a running VM, tagged
// TagPendingResize so the restart it needs is found later (a stopped VM
// loses the tag: its start applies everything). A smaller disk is left
// alone (ValidateMachines refuses it).
func (u *configUpdate) sizing(conf map[string]string, want sizing, running bool) {
	have := sizingOf(conf)
	when := "at next start"
	if running {
		when = "at next restart"
	}
	if have.cores != want.cores {
		u.body["cores"] = strconv.Itoa(want.cores)
		u.details = append(u.details, fmt.Sprintf("cores %d -> %d (%s)", have.cores, want.cores, when))
	}
	if have.memoryMB != want.memoryMB {
		u.body["memory"] = strconv.Itoa(want.memoryMB)
		u.details = append(u.details, fmt.Sprintf("memory %s -> %s (%s)", memory(have.memoryMB), memory(want.memoryMB), when))
	}
	grow := have.diskGB > 0 && want.diskGB > have.diskGB
	if grow {
		u.growGB = want.diskGB
		u.details = append(u.details, fmt.Sprintf("disk %d -> %d GB (%s)", have.diskGB, want.diskGB, when))
	}
	switch tagged := hasTag(conf, TagPendingResize); {
	case grow && running && !tagged:
		u.body["tags"] = withTag(conf, TagPendingResize, true)
	case !running && tagged:
		// The start ReconcileMachines plans next applies the grown disk.
		u.body["tags"] = withTag(conf, TagPendingResize, false)
		u.details = append(u.details, "disk resize applied at start")
	}
}

// resizeDisk grows scsi0 to gb and waits for the task (Proxmox answers
// with a task id, or nothing on older versions).
func (c *Cloud) resizeDisk(ctx context.Context, vm vmTarget, gb int) error {
	defer c.configs.forget(vm.node, vm.vmid)
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

// PendingRestart lists the running owned VMs that wait for a Proxmox
// restart: cores or memory pending (the config with its pending changes
// differs from what the VM runs with), the TagPendingResize tag, a
// NIC still carrying mtu= (rewritten only at the restart), or, for a plan
// that has not written them yet, cores, memory or disk growth that
// ReconcileMachines is about to make. Stopped VMs need none: the start
// that ReconcileMachines plans applies everything.
func (c *Cloud) PendingRestart(ctx context.Context, inv *provider.Inventory) ([]string, error) {
	cluster := c.cluster
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
		conf, err := c.readConfigs(ctx, vm.host, vm.node, vm.vmid)
		if err != nil {
			return err
		}
		running, next := sizingOf(conf.running), sizingOf(conf.next)
		pending[i] = running.cores != next.cores || running.memoryMB != next.memoryMB || hasTag(conf.next, TagPendingResize) || len(nicsWithMTU(conf.next)) > 0
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
// would not), or starts it when it is stopped, through plan. Right before
// it, NICs still carrying mtu= are rewritten to inherit the bridge MTU;
// after it, the TagPendingResize tag is cleared.
func (c *Cloud) RestartMachine(ctx context.Context, m provider.Machine, plan *provider.Plan) error {
	node, vmid, err := vmRef(m)
	if err != nil {
		return err
	}
	vm := vmTarget{host: m.Hostname, node: node, vmid: vmid}
	change := state.Change{Action: state.ActionUpdate, Kind: KindVM, Name: vm.host, Detail: "restart to apply pending sizing / NIC MTU", Disruption: state.DisruptionReboot}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		var status struct {
			Status string `json:"status"`
		}
		if err := c.client.Get(ctx, vmPath(vm.node, vm.vmid)+"/status/current", &status); err != nil {
			return fmt.Errorf("read the status of VM %d on %s: %w", vm.vmid, vm.node, err)
		}
		conf, err := c.readConfig(ctx, vm.host, vm.node, vm.vmid)
		if err != nil {
			return err
		}
		if nics := nicsWithMTU(conf); len(nics) > 0 {
			if err := c.putConfig(ctx, vm, nics); err != nil {
				return err
			}
		}
		op := "reboot"
		if status.Status != "running" {
			op = "start"
		}
		if err := c.power(ctx, vm, op); err != nil || !hasTag(conf, TagPendingResize) {
			return err
		}
		if err := c.putConfig(ctx, vm, map[string]string{"tags": withTag(conf, TagPendingResize, false)}); err != nil {
			return fmt.Errorf("clear the %s tag: %w", TagPendingResize, err)
		}
		return nil
	})
}
