package lab

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// proxmoxBridgeCIDR is the subnet the lab's bridge vmbr0 hands out by DHCP:
// every started VM gets the next free address from .11 up; .2 is left for
// the API VIP.
const proxmoxBridgeCIDR = "127.20.0.0/24"

// dhcp leases loopback addresses of the bridge subnet to VMs.
type dhcp struct {
	mu     sync.Mutex
	prefix netip.Prefix
	leases map[int]netip.Addr // by VMID
}

// lease returns vmid's address, leasing a new one on first use.
func (d *dhcp) lease(vmid int) (netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.leases[vmid]; ok {
		return a, nil
	}
	used := map[netip.Addr]bool{}
	for _, a := range d.leases {
		used[a] = true
	}
	a := d.prefix.Addr()
	for range 10 {
		a = a.Next()
	}
	for ; d.prefix.Contains(a); a = a.Next() {
		if !used[a] {
			d.leases[vmid] = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("dhcp: %s is exhausted", d.prefix)
}

func (d *dhcp) release(vmid int) (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.leases[vmid]
	delete(d.leases, vmid)
	return a, ok
}

// startProxmox runs the simulated Proxmox VE: a started VM boots a Talos node
// from the user-data of its cidata ISO, on an address the bridge's DHCP
// leases (which the guest agent then reports); stopping or deleting the VM
// takes the node down.
func (l *Lab) startProxmox() error {
	pve, err := proxmox.Start(l.ctx, proxmox.Options{Injector: l.inj, Recorder: l.rec})
	if err != nil {
		return err
	}
	l.Proxmox = pve
	l.dhcp = &dhcp{prefix: netip.MustParsePrefix(proxmoxBridgeCIDR), leases: map[int]netip.Addr{}}
	pve.OnEvent(l.onProxmox)
	l.add(Endpoint{Name: "proxmox", URL: pve.URL}, pve.Close)
	return nil
}

func (l *Lab) onProxmox(ev proxmox.Event) {
	switch ev.Kind { //nolint:exhaustive // a created VM boots only when started
	case proxmox.VMStarted:
		_, nc, err := l.Proxmox.CidataISO(ev.VMID)
		if err != nil || len(nc.UserData()) == 0 {
			l.logf("proxmox: VM %d (%s) has no cidata user-data; no Talos node boots", ev.VMID, ev.Name)
			return
		}
		addr, err := l.dhcp.lease(ev.VMID)
		if err != nil {
			l.logf("proxmox: VM %d: %v", ev.VMID, err)
			return
		}
		if n, ok := l.fleet.Node(addr); ok {
			n.PowerOn()
		} else if _, err := l.fleet.Boot(addr, nc.UserData(), talosnode.Knobs{}); err != nil {
			l.logf("proxmox: boot VM %d on %s: %v", ev.VMID, addr, err)
			return
		}
		if err := l.Proxmox.SetGuestAddress(ev.VMID, netip.PrefixFrom(addr, l.dhcp.prefix.Bits())); err != nil {
			l.logf("proxmox: guest agent of VM %d: %v", ev.VMID, err)
		}
	case proxmox.VMStopped:
		if addr, ok := l.dhcp.leased(ev.VMID); ok {
			if n, ok := l.fleet.Node(addr); ok {
				n.PowerOff()
			}
		}
	case proxmox.VMDeleted:
		if addr, ok := l.dhcp.release(ev.VMID); ok {
			l.fleet.Destroy(addr)
		}
	}
}

func (d *dhcp) leased(vmid int) (netip.Addr, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.leases[vmid]
	return a, ok
}

// writeProxmoxDir writes a cluster directory for the lab's Proxmox VE: the
// lab's API token, the CA to trust, and the bridge subnet with its VIP.
func (l *Lab) writeProxmoxDir(dir, name string) ([]string, error) {
	const caFile = "proxmox-ca.pem" // relative to the cluster directory
	cluster := fmt.Sprintf(`# Written by talosc-lab for its simulated Proxmox VE.
name: %s
include: [secrets.yaml]
talos:
  version: %s
kubernetes:
  version: v1.35.4
controlplane: {count: 3, cores: 2, memory: 4, disk: 20}
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
    kubeapi_vip: 127.20.0.2
  dns: []
  ntp: [127.0.0.123]
security:
  kubernetes:
    lab: 127.0.0.0/8
  talos:
    lab: 127.0.0.0/8
`, name, DefaultTalosVersion, l.Proxmox.URL, caFile, proxmoxBridgeCIDR)
	secrets := fmt.Sprintf("proxmox:\n  token_id: %q\n  token_secret: %q\n", proxmox.DefaultTokenID, proxmox.DefaultTokenSecret)
	return writeFiles(dir, []file{
		{"cluster.yaml", []byte(cluster)},
		{"secrets.yaml", []byte(secrets)},
		{caFile, l.Proxmox.CAPEM},
	})
}
