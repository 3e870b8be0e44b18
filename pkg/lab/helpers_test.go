package lab_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// needKubeAPIServer skips a test that starts real kube-apiservers in -short
// runs, unless the prebuilt binary is at hand.
func needKubeAPIServer(t *testing.T) {
	t.Helper()
	if testing.Short() && os.Getenv("TALOSC_KUBE_APISERVER") == "" {
		t.Skip("needs the lab's kube-apiserver binary (TALOSC_KUBE_APISERVER); not in -short")
	}
}

// eventually polls fn until it succeeds or the budget runs out.
func eventually(tb testing.TB, what string, budget time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(budget)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still failing after %s: %v", what, budget, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// osCluster is a Talos cluster being built on the lab's OpenStack the way
// talosc builds one: network, subnet, a VIP port, an image, then one port
// and one server (with its machine config as user_data) per machine.
type osCluster struct {
	tb               testing.TB
	compute, network *gophercloud.ServiceClient
	networkID        string
	subnetID         string
	imageID          string
	cfg              *config.Cluster
	id               *identity.Identity
	vip              string
	installers       map[string]string
}

func newOSCluster(tb testing.TB, l *lab.Lab, cidr string, controlPlanes, workers int) *osCluster {
	tb.Helper()
	ctx := tb.Context()
	pc, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: l.OpenStack.AuthURL(), Username: "demo", Password: openstack.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	c := &osCluster{tb: tb}
	imagec, err := gos.NewImageV2(pc, eo)
	if err != nil {
		tb.Fatal(err)
	}
	if c.network, err = gos.NewNetworkV2(pc, eo); err != nil {
		tb.Fatal(err)
	}
	if c.compute, err = gos.NewComputeV2(pc, eo); err != nil {
		tb.Fatal(err)
	}
	c.compute.Microversion = "2.52"
	nw, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: "lab-test"}).Extract()
	if err != nil {
		tb.Fatal(err)
	}
	sn, err := subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: nw.ID, CIDR: cidr, IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		tb.Fatal(err)
	}
	c.networkID, c.subnetID = nw.ID, sn.ID
	c.vip = c.port("lab-kubeapi").FixedIPs[0].IPAddress
	img, err := images.Create(ctx, imagec, images.CreateOpts{Name: "talos", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()
	if err != nil {
		tb.Fatal(err)
	}
	if err := imagedata.Upload(ctx, imagec, img.ID, strings.NewReader("talos image")).ExtractErr(); err != nil {
		tb.Fatal(err)
	}
	c.imageID = img.ID
	if c.id, err = identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml")); err != nil {
		tb.Fatal(err)
	}
	c.cfg = loadCluster(tb, cidr, controlPlanes, workers)
	schematic, err := factory.BaseSchematic().ID()
	if err != nil {
		tb.Fatal(err)
	}
	ref := factory.InstallerRef("factory.talos.dev", factory.PlatformOpenStack, schematic, c.cfg.Talos.Version, false)
	c.installers = map[string]string{config.RoleControlPlane: ref, "worker": ref}
	return c
}

func (c *osCluster) port(name string) *ports.Port {
	c.tb.Helper()
	p, err := ports.Create(c.tb.Context(), c.network, ports.CreateOpts{NetworkID: c.networkID, Name: name, FixedIPs: []ports.IP{{SubnetID: c.subnetID}}}).Extract()
	if err != nil {
		c.tb.Fatal(err)
	}
	return p
}

// boot creates machine m's port and server and waits until it is ACTIVE.
func (c *osCluster) boot(m config.Machine) (serverID, addr string) {
	c.tb.Helper()
	return c.bootOn(m, c.port(m.Hostname))
}

// bootOn creates machine m's server on port p and waits until it is ACTIVE.
func (c *osCluster) bootOn(m config.Machine, p *ports.Port) (serverID, addr string) {
	c.tb.Helper()
	ctx := c.tb.Context()
	mc, err := machineconfig.Generate(machineconfig.Input{
		Cluster: c.cfg, Secrets: c.id.Bundle(), AdvertisedAddress: c.vip, VIP: netip.MustParseAddr(c.vip), Installers: c.installers,
	}, machineconfig.Node{Machine: m, TalosVersion: c.cfg.Talos.Version, KubernetesVersion: c.cfg.Kubernetes.Version, MACs: []string{p.MACAddress}})
	if err != nil {
		c.tb.Fatal(err)
	}
	srv, err := servers.Create(ctx, c.compute, servers.CreateOpts{
		Name: m.Hostname, FlavorRef: "3", ImageRef: c.imageID, UserData: mc.Bytes(), Networks: []servers.Network{{Port: p.ID}},
	}, nil).Extract()
	if err != nil {
		c.tb.Fatal(err)
	}
	if err := servers.WaitForStatus(ctx, c.compute, srv.ID, "ACTIVE"); err != nil {
		c.tb.Fatal(err)
	}
	return srv.ID, p.FixedIPs[0].IPAddress
}

// talos returns a machinery client for the node at addr (mTLS with the
// cluster's talosconfig) and a context addressed to it.
func (c *osCluster) talos(addr string) (*client.Client, context.Context) {
	c.tb.Helper()
	tc, err := identity.Talosconfig(c.id, c.cfg.Name, addr)
	if err != nil {
		c.tb.Fatal(err)
	}
	cl, err := client.New(c.tb.Context(), client.WithConfig(tc))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(func() { _ = cl.Close() })
	return cl, client.WithNode(c.tb.Context(), addr)
}

// bootstrap bootstraps etcd on the node behind nctx, once it can.
func bootstrap(tb testing.TB, c *client.Client, nctx context.Context) {
	tb.Helper()
	eventually(tb, "bootstrap", 20*time.Second, func() error {
		err := c.Bootstrap(nctx, nil)
		if err != nil && strings.Contains(err.Error(), "AlreadyExists") {
			return nil
		}
		return err
	})
}

// kubeClient is a clientset on the admin kubeconfig the control plane
// behind nctx hands out (its API's URL and CA), with 2 s call timeouts.
func kubeClient(tb testing.TB, tc *client.Client, nctx context.Context) kubernetes.Interface {
	tb.Helper()
	var kubeconfig []byte
	eventually(tb, "kubeconfig", 10*time.Second, func() error {
		var err error
		kubeconfig, err = tc.Kubeconfig(nctx)
		return err
	})
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	rc.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}

// loadCluster is an OpenStack cluster.yaml on cidr with the given pools.
func loadCluster(tb testing.TB, cidr string, controlPlanes, workers int) *config.Cluster {
	tb.Helper()
	dir := tb.TempDir()
	data := fmt.Sprintf(`name: labtest
talos: {version: v1.13.8}
kubernetes: {version: v1.35.4}
controlplane: {count: %d, flavor: talos.cp, disk: 20}
workers: {worker: {count: %d, flavor: talos.worker, disk: 20}}
openstack: {url: "http://127.0.0.1:1/v3", allow_http: true, availability_zone: nova, external_net: public}
network:
  cluster: {cidr: %s}
  dns: []
  ntp: []
`, controlPlanes, workers, cidr)
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}
