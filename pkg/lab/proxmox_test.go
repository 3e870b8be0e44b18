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
)

// TestProxmoxVMBootsATalosNode: a VM created with go-proxmox, carrying a
// real machine config on its cidata ISO, boots a Talos node on the address
// the lab bridge leases it; the guest agent reports that address, machinery's
// client reaches the node over mTLS, and stopping the VM takes it down.
func TestProxmoxVMBootsATalosNode(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderProxmox, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	dir := t.TempDir()
	if _, err := l.WriteClusterDir(dir, "pxlab"); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatalf("the lab's cluster directory does not load: %v", err)
	}
	id, err := identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Hostnames()[0]
	schematic, err := factory.BaseSchematic().ID()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := machineconfig.Generate(machineconfig.Input{
		Cluster: cfg, Secrets: id.Bundle(), AdvertisedAddress: cfg.Network.Cluster.KubeAPIVIP.String(), VIP: cfg.Network.Cluster.KubeAPIVIP,
		Installers: map[string]string{config.RoleControlPlane: factory.InstallerRef("factory.talos.dev", factory.PlatformNoCloud, schematic, cfg.Talos.Version, false)},
	}, machineconfig.Node{Machine: m, TalosVersion: cfg.Talos.Version, KubernetesVersion: cfg.Kubernetes.Version})
	if err != nil {
		t.Fatal(err)
	}

	c := goproxmox.NewClient(l.Proxmox.APIURL, goproxmox.WithAPIToken(proxmox.DefaultTokenID, proxmox.DefaultTokenSecret), goproxmox.WithHTTPClient(l.Proxmox.HTTPClient()))
	node, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatal(err)
	}
	wait := func(task *goproxmox.Task, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx, 10*time.Millisecond, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	opt := func(k string, v any) goproxmox.VirtualMachineOption {
		return goproxmox.VirtualMachineOption{Name: k, Value: v}
	}
	wait(node.NewVirtualMachine(ctx, 101, opt("name", m.Hostname), opt("scsi0", "local-lvm:10"), opt("agent", "enabled=1"),
		opt("net0", "virtio="+machineconfig.MAC(cfg.Name, m.Hostname, 0)+",bridge=vmbr0")))
	vm, err := node.VirtualMachine(ctx, 101)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.CloudInit(ctx, "ide3", string(mc.Bytes()), "local-hostname: "+m.Hostname+"\n", "", "", goproxmox.WithCloudInitStorage("local")); err != nil {
		t.Fatal(err)
	}
	wait(vm.Start(ctx))

	var addr netip.Addr
	eventually(t, "the guest agent reports the leased address", 10*time.Second, func() error {
		ifaces, err := vm.AgentGetNetworkIFaces(ctx)
		if err != nil {
			return err
		}
		for _, i := range ifaces {
			for _, a := range i.IPAddresses {
				if p, err := netip.ParseAddr(a.IPAddress); err == nil && p.IsLoopback() {
					addr = p
					return nil
				}
			}
		}
		return errors.New("no address yet")
	})
	if !netip.MustParsePrefix("127.20.0.0/24").Contains(addr) {
		t.Fatalf("leased %s, outside the bridge subnet", addr)
	}
	tc, err := identity.Talosconfig(id, cfg.Name, addr.String())
	if err != nil {
		t.Fatal(err)
	}
	tcl, err := client.New(ctx, client.WithConfig(tc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcl.Close() }()
	nctx := client.WithNode(ctx, addr.String())
	eventually(t, "talos version over mTLS", 20*time.Second, func() error {
		_, err := tcl.Version(nctx)
		return err
	})
	wait(vm.Stop(ctx))
	eventually(t, "the node goes down with its VM", 10*time.Second, func() error {
		vctx, cancel := context.WithTimeout(nctx, time.Second)
		defer cancel()
		if _, err := tcl.Version(vctx); err == nil {
			return errors.New("the node still answers")
		}
		return nil
	})
}
