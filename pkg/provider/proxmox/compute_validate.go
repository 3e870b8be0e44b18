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
// disk shrink, a move to another node, another proxmox.storage, NIC
// changes (the cluster bridge or VLAN, the external NIC added, removed,
// moved or retagged) and, with managed SDN, a running address the static
// layout no longer computes, every one at once. It reads the config of
// each existing desired VM and mutates nothing.
func (c *Cloud) ValidateMachines(ctx context.Context, desired []config.Machine, inv *provider.Inventory) error {
	cluster := c.cluster
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
	var renumbered, unknown []string
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
		for _, n := range nicChanges(cluster, e.conf) {
			r.Add(n.key, n.have, n.want, host, n.why)
		}
		switch moved, known := sdnRenumbered(cluster, e.want, e.have); {
		case !known:
			unknown = append(unknown, host)
		case moved != "":
			renumbered = append(renumbered, moved)
		}
	}
	return errors.Join(r.Err(), renumberError(renumbered), unknownAddressError(unknown))
}

// sdnRenumbered describes, as "<host> <running> -> <computed>", an
// existing VM whose managed-SDN static address the layout now computes
// differently from the one it runs with (the guest agent's); "" when it
// does not. known is false when the VM is on managed SDN but its running
// address is unknown (a stopped VM, a silent guest agent): whether it
// would be renumbered cannot be told.
func sdnRenumbered(cluster *config.Cluster, want config.Machine, have provider.Machine) (moved string, known bool) {
	addr, ok := cluster.SDNAddress(want)
	switch {
	case !ok:
		return "", true
	case !have.Address.IsValid():
		return "", false
	case have.Address == addr:
		return "", true
	}
	return fmt.Sprintf("%s %s -> %s", want.Hostname, have.Address, addr), true
}

// unknownAddressError refuses, under managed SDN, existing VMs whose
// running address nobody reports: a renumbering refusal that cannot
// decide must not pass (I-V3).
func unknownAddressError(hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	return fmt.Errorf("managed SDN: the running address of existing VM(s) %s is unknown (stopped, or the QEMU guest agent does not answer), so whether the static layout would renumber them cannot be told; refusing: start them and check qemu-guest-agent, then re-run",
		strings.Join(hosts, ", "))
}

// renumberError refuses renumbering running nodes (reference §5.3: the
// static layout gives worker pool i, in file order, its own block).
func renumberError(renumbered []string) error {
	if len(renumbered) == 0 {
		return nil
	}
	return fmt.Errorf("managed SDN would renumber existing VM(s) (%s): their running address is not the one the static layout now computes; worker pool changes renumber later pools (a pool added before or between the existing ones, a pool removed or reordered, or another network.cluster.cidr): add new pools after the existing ones and keep the pool order and network.cluster.cidr, or recreate those machines",
		strings.Join(renumbered, ", "))
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
