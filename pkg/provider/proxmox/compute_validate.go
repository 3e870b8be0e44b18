package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// ValidateMachines refuses what Proxmox cannot change on existing VMs: a
// disk shrink, a move to another node, another proxmox.storage and
// another cluster bridge, every one at once. It reads the config of each
// existing desired VM and mutates nothing.
func (c *Cloud) ValidateMachines(ctx context.Context, cluster *config.Cluster, desired []config.Machine, inv *provider.Inventory) error {
	type existing struct {
		want config.Machine
		have provider.Machine
		conf map[string]string
	}
	var list []existing
	for _, d := range desired {
		if m, ok := inv.Find(d.Hostname); ok {
			list = append(list, existing{want: d, have: m})
		}
	}
	errs := provider.FanOut(ctx, len(list), func(ctx context.Context, i int) error {
		node, vmid, err := vmRef(list[i].have)
		if err == nil {
			list[i].conf, err = c.readConfig(ctx, list[i].have.Hostname, node, vmid)
		}
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	px := cluster.Proxmox
	r := provider.Refusals{What: "VM(s)"}
	for _, e := range list {
		pool, key, ok := cluster.PoolOf(e.want.Pool)
		if !ok {
			continue
		}
		host := e.want.Hostname
		storage, size := driveOf(e.conf["scsi0"])
		if size > pool.Disk {
			r.Add(key+".disk", strconv.Itoa(size), strconv.Itoa(pool.Disk), host, "Proxmox disks only grow")
		}
		if pool.Node != "" && e.have.Zone != pool.Node {
			r.Add(key+".node", e.have.Zone, pool.Node, host, "talosc never moves an existing VM to another node")
		}
		if storage != "" && storage != px.Storage {
			r.Add("proxmox.storage", storage, px.Storage, host, "disks stay on the storage they were created on")
		}
		if bridge, want := option(e.conf["net0"], "bridge"), clusterBridge(cluster); bridge != "" && bridge != want {
			r.Add("proxmox.network.cluster", bridge, want, host, "the cluster NIC's bridge is set when a VM is created")
		}
	}
	return r.Err()
}

// readConfig reads a VM's config (pending changes applied), values as
// strings.
func (c *Cloud) readConfig(ctx context.Context, host, node string, vmid int) (map[string]string, error) {
	return c.readConfigView(ctx, host, node, vmid, false)
}

// readConfigView reads a VM's config, values as strings: with current,
// what the VM runs with (config?current=1, pending changes left out).
func (c *Cloud) readConfigView(ctx context.Context, host, node string, vmid int, current bool) (map[string]string, error) {
	path, what := vmPath(node, vmid)+"/config", "config"
	if current {
		path, what = path+"?current=1", "running config"
	}
	var raw map[string]any
	if err := c.client.Get(ctx, path, &raw); err != nil {
		return nil, fmt.Errorf("read the %s of VM %s (%d on %s): %w", what, host, vmid, node, err)
	}
	conf := make(map[string]string, len(raw))
	for k, v := range raw {
		conf[k] = fmt.Sprint(v)
	}
	return conf, nil
}

// option is one key=value option of a Proxmox property string.
func option(prop, key string) string {
	for part := range strings.SplitSeq(prop, ",") {
		if v, ok := strings.CutPrefix(part, key+"="); ok {
			return v
		}
	}
	return ""
}

// driveOf is the storage and size in GB of a disk ("local-lvm:vm-100-disk-1,size=20G").
func driveOf(drive string) (string, int) {
	file, _, _ := strings.Cut(drive, ",")
	storage, _, _ := strings.Cut(file, ":")
	size := option(drive, "size")
	if size == "" {
		return storage, 0
	}
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30, 'T': 40}[size[len(size)-1]]
	n, err := strconv.ParseFloat(strings.TrimRight(size, "KMGT"), 64)
	if err != nil {
		return storage, 0
	}
	return storage, int(n * float64(uint64(1)<<shift) / gib)
}
