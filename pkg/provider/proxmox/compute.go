package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// Plan kinds of the compute half.
const (
	// KindVM is a machine's VM.
	KindVM = "proxmox:vm"
	// KindPool is the cluster's resource pool.
	KindPool = "proxmox:pool"
	// KindCidata is a machine's NoCloud ISO once its VM has booted.
	KindCidata = "proxmox:cidata"
)

// clusterBridge is the bridge of the cluster NIC: proxmox.network.cluster
// bridge, vnet or the managed SDN VNet.
func clusterBridge(cluster *config.Cluster) string {
	n := cluster.Proxmox.Network.Cluster
	switch {
	case n.Bridge != "":
		return n.Bridge
	case n.VNet != "":
		return n.VNet
	case n.SDN != nil:
		return n.SDN.Name
	}
	return ""
}

// vmJob is one VM to create, placed.
type vmJob struct {
	spec provider.MachineSpec
	pool config.Pool
	node string
}

// CreateMachines ensures the pool, places the machines (spread) and then,
// in three stages of at most provider.MaxConcurrent VMs at a time (so a plan always
// reads the same), creates each VM with its cidata ISO, configures its
// firewall and starts it. It returns the machines it created and every
// failure, joined.
func (c *Cloud) CreateMachines(ctx context.Context, specs []provider.MachineSpec, plan *provider.Plan) ([]provider.Machine, error) {
	cluster := c.cluster
	if len(specs) == 0 {
		return nil, nil
	}
	jobs, err := c.placeJobs(ctx, cluster, specs, plan)
	if err != nil {
		return nil, err
	}
	vms := make([]vmTarget, len(jobs))
	var alloc sync.Mutex
	errs := provider.FanOut(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		vms[i] = vmTarget{host: j.spec.Machine.Hostname, node: j.node}
		change := state.Change{
			Action: state.ActionCreate, Kind: KindVM, Name: vms[i].host,
			Detail: fmt.Sprintf("node %s, %d cores, %d GB, %d GB", j.node, j.pool.Cores, j.pool.Memory, j.pool.Disk),
		}
		return plan.Do(ctx, change, func(ctx context.Context) error {
			var err error
			vms[i].vmid, err = c.createVM(ctx, cluster, j, &alloc)
			return err
		})
	})
	stage(ctx, errs, func(ctx context.Context, i int) error {
		if err := c.reconcileFirewall(ctx, cluster, vms[i], true, plan); err != nil {
			return fmt.Errorf("VM %s: %w", vms[i].host, err)
		}
		return nil
	})
	stage(ctx, errs, func(ctx context.Context, i int) error { return c.startVM(ctx, vms[i], "start the new VM", plan) })
	var created []provider.Machine
	for i, j := range jobs {
		if errs[i] != nil {
			continue
		}
		m := j.spec.Machine
		out := provider.Machine{
			Hostname: m.Hostname, Role: m.Role, Pool: m.Pool, Status: "running", Zone: j.node, DiskGB: j.pool.Disk,
			Address: j.spec.Attachment.Address, Kind: KindVM,
		}
		if vms[i].vmid > 0 {
			out.ID = strconv.Itoa(vms[i].vmid)
		}
		created = append(created, out)
	}
	return created, errors.Join(errs...)
}

// stage runs fn (through fanOut) for every index whose errs entry is
// still nil, recording its error there.
func stage(ctx context.Context, errs []error, fn func(ctx context.Context, i int) error) {
	var todo []int
	for i, err := range errs {
		if err == nil {
			todo = append(todo, i)
		}
	}
	for k, err := range provider.FanOut(ctx, len(todo), func(ctx context.Context, k int) error { return fn(ctx, todo[k]) }) {
		errs[todo[k]] = err
	}
}

// placeJobs checks the specs, ensures the pool (through plan) and places
// every machine, in hostname order, on the compute nodes.
func (c *Cloud) placeJobs(ctx context.Context, cluster *config.Cluster, specs []provider.MachineSpec, plan *provider.Plan) ([]vmJob, error) {
	env, err := c.Preflight(ctx, cluster)
	if err != nil {
		return nil, err
	}
	pool, err := c.ownedPool(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	var cpNodes []string
	if pool != nil {
		for _, r := range ownedMembers(pool, cluster.Name) {
			if machineOf(r, cluster).Role == config.RoleControlPlane {
				cpNodes = append(cpNodes, r.Node)
			}
		}
	}
	place := newPlacement(env.Nodes, cpNodes)
	order := make([]int, len(specs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(specs[a].Machine.Hostname, specs[b].Machine.Hostname) })
	jobs := make([]vmJob, len(specs))
	var errs []error
	for _, i := range order {
		s := specs[i]
		p, key, ok := cluster.PoolOf(s.Machine.Pool)
		if !ok {
			errs = append(errs, fmt.Errorf("VM %s: pool %q is not in cluster.yaml", s.Machine.Hostname, s.Machine.Pool))
			continue
		}
		node, err := place.place(s.Machine, p, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs[i] = vmJob{spec: s, pool: p, node: node}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if pool == nil {
		id := PoolID(cluster.Name)
		change := state.Change{Action: state.ActionCreate, Kind: KindPool, Name: id, Detail: "comment " + PoolComment(cluster.Name)}
		if err := plan.Do(ctx, change, func(ctx context.Context) error {
			err := c.settle(ctx, "create pool "+id, func(ctx context.Context) error {
				return c.client.Post(ctx, "/pools", map[string]string{"poolid": id, "comment": PoolComment(cluster.Name)}, nil)
			}, func(ctx context.Context) (bool, error) {
				p, err := c.ownedPool(ctx, cluster.Name)
				return p != nil, err
			})
			if err != nil {
				return fmt.Errorf("create the Proxmox pool (needs Pool.Allocate on /): %w", err)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// vmConfig is the POST nodes/<node>/qemu body of a machine (reference
// §5.3). NICs carry no mtu= so they inherit the bridge MTU.
func vmConfig(cluster *config.Cluster, j vmJob, vmid int) map[string]any {
	m, px, host := j.spec.Machine, cluster.Proxmox, j.spec.Machine.Hostname
	conf := map[string]any{
		"vmid":        vmid,
		"name":        host,
		"pool":        PoolID(cluster.Name),
		"description": PoolComment(cluster.Name),
		"tags":        VMTags(m, cluster.Name),
		"cores":       j.pool.Cores,
		"memory":      strconv.Itoa(j.pool.Memory * 1024),
		"cpu":         "host",
		"ostype":      "l26",
		"machine":     "q35",
		"bios":        "ovmf",
		"efidisk0":    px.Storage + ":1,efitype=4m,pre-enrolled-keys=0",
		"scsihw":      "virtio-scsi-single",
		"scsi0":       fmt.Sprintf("%s:%d", px.Storage, j.pool.Disk),
		"ide2":        j.spec.Image.ID + ",media=cdrom",
		"ide3":        cidataVolID(cluster, host) + ",media=cdrom",
		"net0":        nic(naming.MAC(cluster.Name, host, 0), clusterBridge(cluster), cluster.Network.Cluster.VLAN),
		"agent":       "enabled=1",
		"onboot":      1,
		"boot":        "order=scsi0;ide2",
		"smbios1":     "uuid=" + uuid.NewSHA1(uuid.NameSpaceDNS, []byte("taloscluster:"+cluster.Name+":"+host)).String(),
	}
	if bridge, vlan, ok := externalNIC(cluster); ok {
		conf["net1"] = nic(naming.MAC(cluster.Name, host, 1), bridge, vlan)
	}
	return conf
}

// createVM uploads the machine's cidata ISO, allocates a VMID and creates
// the VM, waiting for the task. When the upload or the create fails,
// Ctrl-C included, the ISO is removed again (within the request timeout)
// unless a VM of ours exists or may exist: the next run adopts that VM,
// which boots from this ISO.
func (c *Cloud) createVM(ctx context.Context, cluster *config.Cluster, j vmJob, alloc *sync.Mutex) (int, error) {
	if j.spec.Image.ID == "" {
		return 0, errors.New("no boot ISO volume: the image phase did not provide one")
	}
	host := j.spec.Machine.Hostname
	vmid, err := 0, c.uploadCidata(ctx, cluster, j.node, host, j.spec.Config)
	if err == nil {
		if vmid, err = c.postVM(ctx, cluster, j, alloc); err == nil {
			return vmid, nil
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.RequestTimeout)
	defer cancel()
	if errors.Is(err, errUnsettled) && vmid > 0 {
		return 0, err // the VM may still appear: the next run adopts it, with its ISO
	}
	if vmid > 0 {
		ours, oerr := c.vmOwned(cctx, cluster, j.spec.Machine, j.node, vmid)
		if ours || oerr != nil {
			return 0, errors.Join(err, oerr)
		}
	}
	if derr := c.deleteCidata(cctx, cluster, j.node, host); derr != nil {
		err = errors.Join(err, fmt.Errorf("remove the cidata ISO again: %w", derr))
	}
	return 0, err
}

// postVM allocates a VMID and creates the VM on its node. A create whose
// answer was lost is found by its VMID (which only one VM can hold) and
// adopted when the VM carries the machine's name and talosc's markers,
// never created again under another VMID. alloc serialises the VMID's
// allocation with its create (which reserves it), so concurrent creates
// never pick the same one. It returns the VMID it tried (0 when it never
// sent the create).
func (c *Cloud) postVM(ctx context.Context, cluster *config.Cluster, j vmJob, alloc *sync.Mutex) (int, error) {
	alloc.Lock()
	var next json.Number
	if err := c.client.Get(ctx, "/cluster/nextid", &next); err != nil {
		alloc.Unlock()
		return 0, fmt.Errorf("allocate a VMID (cluster/nextid): %w", err)
	}
	vmid, err := strconv.Atoi(next.String())
	if err != nil {
		alloc.Unlock()
		return 0, fmt.Errorf("allocate a VMID: cluster/nextid answered %q", next)
	}
	defer c.configs.forget(j.node, vmid)
	what := fmt.Sprintf("create VM %d on %s", vmid, j.node)
	var upid goproxmox.UPID
	err = c.settle(ctx, what, func(ctx context.Context) error {
		return c.client.Post(ctx, "/nodes/"+j.node+"/qemu", vmConfig(cluster, j, vmid), &upid)
	}, func(ctx context.Context) (bool, error) {
		if err := c.awaitTasks(ctx, j.node, "qmcreate", strconv.Itoa(vmid)); err != nil {
			return false, err
		}
		_, found, err := c.vmConf(ctx, j.node, vmid)
		return found, err
	})
	alloc.Unlock()
	if err != nil {
		return vmid, fmt.Errorf("create VM %d on %s: %w", vmid, j.node, err)
	}
	if upid != "" {
		return vmid, c.wait(ctx, what, goproxmox.NewTask(upid, c.client))
	}
	ours, err := c.vmOwned(ctx, cluster, j.spec.Machine, j.node, vmid)
	if err == nil && !ours {
		err = fmt.Errorf("%s: its answer was lost, and VMID %d now holds a VM that is not talosc's %s; rerun to allocate another VMID", what, vmid, j.spec.Machine.Hostname)
	}
	return vmid, err
}

// vmConf reads a VM's config (pending changes applied); found is false
// when no VM of vmid exists on node.
func (c *Cloud) vmConf(ctx context.Context, node string, vmid int) (map[string]any, bool, error) {
	var conf map[string]any
	err := c.client.Get(ctx, vmPath(node, vmid)+"/config", &conf)
	switch {
	case isMissing(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read the config of VM %d on %s: %w", vmid, node, err)
	}
	return conf, true, nil
}

// vmOwned waits for a create task of vmid still running on node, then
// reports whether the VM exists as machine m's: its name, talosc's
// description and the cluster's tags, all written by the create itself.
func (c *Cloud) vmOwned(ctx context.Context, cluster *config.Cluster, m config.Machine, node string, vmid int) (bool, error) {
	if err := c.awaitTasks(ctx, node, "qmcreate", strconv.Itoa(vmid)); err != nil {
		return false, err
	}
	conf, found, err := c.vmConf(ctx, node, vmid)
	if err != nil || !found {
		return false, err
	}
	tags := splitTags(fmt.Sprint(conf["tags"]))
	return fmt.Sprint(conf["name"]) == m.Hostname && fmt.Sprint(conf["description"]) == PoolComment(cluster.Name) &&
		slices.Contains(tags, TagManaged) && slices.Contains(tags, "cluster_"+strings.ToLower(cluster.Name)), nil
}

// startVM starts a VM (through plan) and waits for the task.
func (c *Cloud) startVM(ctx context.Context, vm vmTarget, why string, plan *provider.Plan) error {
	change := state.Change{Action: state.ActionUpdate, Kind: KindVM, Name: vm.host, Detail: why}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		return c.power(ctx, vm, "start")
	})
}

// power runs a VM power task (start, stop, reboot) and waits for it. A
// request whose answer was lost is judged by the VM's state once the
// tasks it may have started have ended: running (start), stopped (stop),
// or running without pending changes (reboot).
func (c *Cloud) power(ctx context.Context, vm vmTarget, op string) error {
	defer c.configs.forget(vm.node, vm.vmid) // a start applies pending changes
	what := fmt.Sprintf("%s VM %d on %s", op, vm.vmid, vm.node)
	started := false // a task's error names the call already
	err := c.settle(ctx, what, func(ctx context.Context) error {
		var upid goproxmox.UPID
		started = false
		if err := c.client.Post(ctx, vmPath(vm.node, vm.vmid)+"/status/"+op, nil, &upid); err != nil {
			return err
		}
		started = true
		return c.wait(ctx, what, goproxmox.NewTask(upid, c.client))
	}, func(ctx context.Context) (bool, error) {
		if err := c.awaitTasks(ctx, vm.node, "qm"+op, strconv.Itoa(vm.vmid)); err != nil {
			return false, err
		}
		status, err := c.vmStatus(ctx, vm)
		if err != nil || op == "stop" {
			return status == "stopped", err
		}
		if status != "running" || op == "start" {
			return status == "running", nil
		}
		c.configs.forget(vm.node, vm.vmid)
		v, err := c.readConfigs(ctx, vm.host, vm.node, vm.vmid)
		return err == nil && maps.Equal(v.next, v.running), err
	})
	if err != nil && !started {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// vmStatus reads whether a VM is running or stopped.
func (c *Cloud) vmStatus(ctx context.Context, vm vmTarget) (string, error) {
	var status struct {
		Status string `json:"status"`
	}
	if err := c.client.Get(ctx, vmPath(vm.node, vm.vmid)+"/status/current", &status); err != nil {
		return "", fmt.Errorf("read the status of VM %d on %s: %w", vm.vmid, vm.node, err)
	}
	return status.Status, nil
}
