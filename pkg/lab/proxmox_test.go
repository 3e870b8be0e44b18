package lab_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"
	"github.com/siderolabs/talos/pkg/machinery/client"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// pxCluster is a Talos cluster being built on the lab's Proxmox VE with
// go-proxmox, from the cluster directory the lab writes.
type pxCluster struct {
	tb   testing.TB
	cfg  *config.Cluster
	id   *identity.Identity
	node *goproxmox.Node
}

func newPXCluster(tb testing.TB) *pxCluster {
	tb.Helper()
	ctx := tb.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderProxmox, NodesBoot: 10 * time.Millisecond, Logf: tb.Logf})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	dir := tb.TempDir()
	if _, err := l.WriteClusterDir(dir, "pxlab"); err != nil {
		tb.Fatal(err)
	}
	c := &pxCluster{tb: tb}
	if c.cfg, err = config.Load(dir, config.LoadOptions{NeedCredentials: true}); err != nil {
		tb.Fatalf("the lab's cluster directory does not load: %v", err)
	}
	checkLabSources(tb, l, c.cfg)
	if c.id, err = identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml")); err != nil {
		tb.Fatal(err)
	}
	pc := goproxmox.NewClient(l.Proxmox.APIURL, goproxmox.WithAPIToken(proxmox.DefaultTokenID, proxmox.DefaultTokenSecret), goproxmox.WithHTTPClient(l.Proxmox.HTTPClient()))
	if c.node, err = pc.Node(ctx, "pve1"); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c *pxCluster) wait(task *goproxmox.Task, err error) {
	c.tb.Helper()
	if err != nil {
		c.tb.Fatal(err)
	}
	if err := task.Wait(c.tb.Context(), 10*time.Millisecond, 30*time.Second); err != nil {
		c.tb.Fatal(err)
	}
}

// startVM creates VM vmid for machine m, with m's machine config on its
// cidata ISO (a static address when address is valid, else DHCP), and
// starts it.
func (c *pxCluster) startVM(vmid int, m config.Machine, address netip.Prefix) *goproxmox.VirtualMachine {
	c.tb.Helper()
	ctx := c.tb.Context()
	schematic, err := factory.BaseSchematic().ID()
	if err != nil {
		c.tb.Fatal(err)
	}
	vip := c.cfg.Network.Cluster.KubeAPIVIP
	mc, err := machineconfig.Generate(machineconfig.Input{
		Cluster: c.cfg, Secrets: c.id.Bundle(), AdvertisedAddress: vip.String(), VIP: vip,
		Installers: map[string]string{config.RoleControlPlane: factory.InstallerRef("factory.talos.dev", factory.PlatformNoCloud, schematic, c.cfg.Talos.Version, false)},
	}, machineconfig.Node{Machine: m, TalosVersion: c.cfg.Talos.Version, KubernetesVersion: c.cfg.Kubernetes.Version, Address: address})
	if err != nil {
		c.tb.Fatal(err)
	}
	opt := func(k string, v any) goproxmox.VirtualMachineOption {
		return goproxmox.VirtualMachineOption{Name: k, Value: v}
	}
	c.wait(c.node.NewVirtualMachine(ctx, vmid, opt("name", m.Hostname), opt("scsi0", "local-lvm:10"), opt("agent", "enabled=1"),
		opt("net0", "virtio="+naming.MAC(c.cfg.Name, m.Hostname, 0)+",bridge=vmbr0")))
	vm, err := c.node.VirtualMachine(ctx, vmid)
	if err != nil {
		c.tb.Fatal(err)
	}
	if err := vm.CloudInit(ctx, "ide3", string(mc.Bytes()), "local-hostname: "+m.Hostname+"\n", "", "", goproxmox.WithCloudInitStorage("local")); err != nil {
		c.tb.Fatal(err)
	}
	c.wait(vm.Start(ctx))
	return vm
}

// guestAddress waits for the guest agent to report the VM's loopback
// address.
func (c *pxCluster) guestAddress(vm *goproxmox.VirtualMachine) netip.Prefix {
	c.tb.Helper()
	var addr netip.Prefix
	eventually(c.tb, "the guest agent reports the address", 10*time.Second, func() error {
		ifaces, err := vm.AgentGetNetworkIFaces(c.tb.Context())
		if err != nil {
			return err
		}
		for _, i := range ifaces {
			for _, a := range i.IPAddresses {
				if p, err := netip.ParseAddr(a.IPAddress); err == nil && p.IsLoopback() {
					addr = netip.PrefixFrom(p, a.Prefix)
					return nil
				}
			}
		}
		return errors.New("no address yet")
	})
	return addr
}

// talos returns a machinery client for the node at addr and a context
// addressed to it, once the node answers over mTLS.
func (c *pxCluster) talos(addr netip.Addr) (*client.Client, context.Context) {
	c.tb.Helper()
	tc, err := identity.Talosconfig(c.id, c.cfg.Name, addr.String())
	if err != nil {
		c.tb.Fatal(err)
	}
	tcl, err := client.New(c.tb.Context(), client.WithConfig(tc))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(func() { _ = tcl.Close() })
	nctx := client.WithNode(c.tb.Context(), addr.String())
	eventually(c.tb, "talos version over mTLS", 20*time.Second, func() error {
		_, err := tcl.Version(nctx)
		return err
	})
	return tcl, nctx
}

// TestProxmoxVMBootsATalosNode: a VM created with go-proxmox, carrying a
// real machine config on its cidata ISO, boots a Talos node on the address
// the lab bridge leases it; the guest agent reports that address, machinery's
// client reaches the node over mTLS, and stopping the VM takes it down.
func TestProxmoxVMBootsATalosNode(t *testing.T) {
	t.Parallel()
	c := newPXCluster(t)
	vm := c.startVM(101, c.cfg.Hostnames()[0], netip.Prefix{})
	addr := c.guestAddress(vm)
	if want := netip.MustParsePrefix("127.20.0.0/24"); !want.Contains(addr.Addr()) || addr.Bits() != want.Bits() {
		t.Fatalf("leased %s, outside the bridge subnet %s", addr, want)
	}
	tcl, nctx := c.talos(addr.Addr())
	c.wait(vm.Stop(t.Context()))
	eventually(t, "the node goes down with its VM", 10*time.Second, func() error {
		vctx, cancel := context.WithTimeout(nctx, time.Second)
		defer cancel()
		if _, err := tcl.Version(vctx); err == nil {
			return errors.New("the node still answers")
		}
		return nil
	})
}

// TestProxmoxVMBootsOnItsStaticAddress: a machine config with a static
// address on its link (managed SDN) boots the node there, not on a DHCP
// lease, and the guest agent reports it with its prefix.
func TestProxmoxVMBootsOnItsStaticAddress(t *testing.T) {
	t.Parallel()
	c := newPXCluster(t)
	static := netip.MustParsePrefix("127.20.0.77/24")
	vm := c.startVM(102, c.cfg.Hostnames()[0], static)
	if got := c.guestAddress(vm); got != static {
		t.Fatalf("the guest agent reports %s, want the static %s", got, static)
	}
	c.talos(static.Addr())
}
