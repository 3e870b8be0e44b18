package lab

import (
	"cmp"
	"fmt"
	"net/netip"

	"github.com/talosc/talosc/pkg/lab/bridge"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// proxmoxBridgeCIDR is the subnet the lab's bridge vmbr0 hands out by DHCP
// unless Options.ClusterCIDR names another:
// every started VM without a static address gets the next free address
// from .11 up; .2 is left for the API VIP.
const proxmoxBridgeCIDR = "127.20.0.0/24"

// startProxmox runs the simulated Proxmox VE: a started VM boots a Talos node
// from the user-data of its cidata ISO, on the static address of its machine
// config or else one the bridge's DHCP leases (which the guest agent then
// reports); stopping or deleting the VM takes the node down.
func (l *Lab) startProxmox() error {
	pve, err := proxmox.Start(l.ctx, proxmox.Options{
		Injector: l.inj, Recorder: l.rec, DatacenterFirewall: true,
		// A fresh PVE install's storages, and a second one for VM disks (a
		// ZFS pool), so that moving proxmox.storage can be tried.
		Storages: []proxmox.Storage{
			{ID: "local", Type: "dir", Content: []string{"backup", "iso", "vztmpl"}},
			{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}},
			{ID: "local-zfs", Type: "zfspool", Content: []string{"images", "rootdir"}},
		},
	})
	if err != nil {
		return err
	}
	l.Proxmox = pve
	prefix, err := netip.ParsePrefix(cmp.Or(l.opts.ClusterCIDR, proxmoxBridgeCIDR))
	if err != nil {
		return fmt.Errorf("lab cluster CIDR: %w", err)
	}
	l.bridge = bridge.New(prefix)
	pve.OnEvent(l.onProxmox)
	l.add(Endpoint{Name: "proxmox", URL: pve.URL}, pve.Close)
	return nil
}

func (l *Lab) onProxmox(ev proxmox.Event) {
	switch ev.Kind { //nolint:exhaustive // a created VM boots only when started
	case proxmox.VMStarted:
		l.startVM(ev)
	case proxmox.VMStopped:
		if addr, ok := l.bridge.Address(ev.VMID); ok {
			if n, ok := l.fleet.Node(addr); ok {
				n.PowerOff()
			}
		}
	case proxmox.VMDeleted:
		if addr, ok := l.bridge.Release(ev.VMID); ok {
			l.destroyNode(addr)
		}
	}
}

// startVM boots (or powers on) the Talos node of a started VM and reports
// its address through the guest agent.
func (l *Lab) startVM(ev proxmox.Event) {
	// A VM that booted before (its cidata ISO may be gone since) powers its
	// installed node on again, on the address it had.
	if addr, ok := l.bridge.Address(ev.VMID); ok {
		if n, ok := l.fleet.Node(addr); ok {
			n.PowerOn()
			if err := l.Proxmox.SetGuestAddress(ev.VMID, netip.PrefixFrom(addr, l.bridge.Prefix().Bits())); err != nil {
				l.logf("proxmox: guest agent of VM %d: %v", ev.VMID, err)
			}
			return
		}
	}
	_, nc, err := l.Proxmox.CidataISO(ev.VMID)
	if err != nil || len(nc.UserData()) == 0 {
		l.logf("proxmox: VM %d (%s) has no cidata user-data; no Talos node boots", ev.VMID, ev.Name)
		return
	}
	static, err := staticAddress(nc.UserData())
	if err != nil {
		l.logf("proxmox: VM %d (%s): %v; no Talos node boots", ev.VMID, ev.Name, err)
		return
	}
	addr, err := l.bridge.Attach(ev.VMID, static)
	if err != nil {
		l.logf("proxmox: VM %d: %v", ev.VMID, err)
		return
	}
	if n, ok := l.fleet.Node(addr.Addr()); ok {
		n.PowerOn()
	} else if err := l.nodeKnobs.boot(addr.Addr(), nc.UserData()); err != nil {
		l.logf("proxmox: boot VM %d on %s: %v", ev.VMID, addr.Addr(), err)
		return
	}
	if err := l.Proxmox.SetGuestAddress(ev.VMID, addr); err != nil {
		l.logf("proxmox: guest agent of VM %d: %v", ev.VMID, err)
	}
}

// staticAddress is the static link address of a machine config (the first
// one), or none for a DHCP node; it must be a loopback address.
func staticAddress(config []byte) (netip.Prefix, error) {
	addrs, err := talosnode.StaticAddresses(config)
	if err != nil || len(addrs) == 0 {
		return netip.Prefix{}, err
	}
	if err := labnet.CheckLoopback(addrs[0].Addr().String()); err != nil {
		return netip.Prefix{}, fmt.Errorf("static address: %w", err)
	}
	return addrs[0], nil
}

// writeProxmoxDir writes a cluster directory for the lab's Proxmox VE: the
// lab's API token, the CA to trust, and the bridge subnet with its VIP.
func (l *Lab) writeProxmoxDir(dir, name string) ([]string, error) {
	const caFile = "proxmox-ca.pem" // relative to the cluster directory
	cluster := fmt.Sprintf(`# Written by talosc-lab for its simulated Proxmox VE.
name: %s
include: [secrets.yaml]
%scontrolplane: {count: 3, cores: 2, memory: 4, disk: 20}
workers:
  worker: {count: 2, cores: 2, memory: 4, disk: 20}
proxmox:
  url: %s
  storage: local-lvm
  iso_storage: local
  tls_verify: %s
  network:
    cluster:
      bridge: vmbr0
network:
  cluster:
    cidr: %s
    kubeapi_vip: %s
%s`, name, releasesYAML(l.Factory), l.Proxmox.URL, caFile, l.bridge.Prefix(), l.bridge.Prefix().Addr().Next().Next(), loopbackYAML)
	secrets := fmt.Sprintf("proxmox:\n  token_id: %q\n  token_secret: %q\n", proxmox.DefaultTokenID, proxmox.DefaultTokenSecret)
	return writeFiles(dir, []file{
		{"cluster.yaml", []byte(cluster)},
		{"secrets.yaml", []byte(secrets)},
		{caFile, l.Proxmox.CAPEM},
	})
}
