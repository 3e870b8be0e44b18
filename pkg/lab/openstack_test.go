package lab_test

import (
	"context"
	"errors"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// eventually polls fn until it succeeds or the test's budget runs out.
func eventually(t *testing.T, what string, budget time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, budget, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenStackServerBootsATalosNode follows one control plane through the
// lab as talosc will: a Nova server carrying a real machine config boots a
// Talos node on its port's fixed address, which answers machinery's client
// over mTLS, bootstraps, and brings up the real Kubernetes API on the VIP.
func TestOpenStackServerBootsATalosNode(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("TALOSC_KUBE_APISERVER") == "" {
		t.Skip("needs the lab's kube-apiserver binary (TALOSC_KUBE_APISERVER); not in -short")
	}
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	pc, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: l.OpenStack.AuthURL(), Username: "demo", Password: openstack.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	netc, err := gos.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	compute, err := gos.NewComputeV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	compute.Microversion = "2.52"

	const cidr = "127.16.77.0/24"
	network, err := networks.Create(ctx, netc, networks.CreateOpts{Name: "lab-test"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := subnets.Create(ctx, netc, subnets.CreateOpts{NetworkID: network.ID, CIDR: cidr, IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	vipPort, err := ports.Create(ctx, netc, ports.CreateOpts{NetworkID: network.ID, Name: "lab-kubeapi", FixedIPs: []ports.IP{{SubnetID: subnet.ID}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	nodePort, err := ports.Create(ctx, netc, ports.CreateOpts{NetworkID: network.ID, Name: "lab-cp-01", FixedIPs: []ports.IP{{SubnetID: subnet.ID}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	vip, nodeAddr := vipPort.FixedIPs[0].IPAddress, nodePort.FixedIPs[0].IPAddress

	id, err := identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadCluster(t, cidr)
	m := cfg.Hostnames()[0]
	schematic, err := factory.BaseSchematic().ID()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := machineconfig.Generate(machineconfig.Input{
		Cluster: cfg, Secrets: id.Bundle(), AdvertisedAddress: vip, VIP: netip.MustParseAddr(vip),
		Installers: map[string]string{config.RoleControlPlane: factory.InstallerRef("factory.talos.dev", factory.PlatformOpenStack, schematic, cfg.Talos.Version, false)},
	}, machineconfig.Node{Machine: m, TalosVersion: cfg.Talos.Version, KubernetesVersion: cfg.Kubernetes.Version, MACs: []string{nodePort.MACAddress}})
	if err != nil {
		t.Fatal(err)
	}
	imagec, err := gos.NewImageV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Create(ctx, imagec, images.CreateOpts{Name: "talos", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := imagedata.Upload(ctx, imagec, img.ID, strings.NewReader("talos image")).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	srv, err := servers.Create(ctx, compute, servers.CreateOpts{
		Name: m.Hostname, FlavorRef: "3", ImageRef: img.ID, UserData: mc.Bytes(), ConfigDrive: new(bool),
		Networks: []servers.Network{{Port: nodePort.ID}},
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := servers.WaitForStatus(ctx, compute, srv.ID, "ACTIVE"); err != nil {
		t.Fatal(err)
	}

	tc, err := identity.Talosconfig(id, cfg.Name, nodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, client.WithConfig(tc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	nctx := client.WithNode(ctx, nodeAddr)
	eventually(t, "talos version over mTLS", 20*time.Second, func() error {
		v, err := c.Version(nctx)
		if err == nil && v.Messages[0].Version.Tag != cfg.Talos.Version {
			return errors.New("version " + v.Messages[0].Version.Tag)
		}
		return err
	})
	eventually(t, "bootstrap", 20*time.Second, func() error {
		err := c.Bootstrap(nctx, nil)
		if err != nil && strings.Contains(err.Error(), "AlreadyExists") {
			return nil
		}
		return err
	})
	var kubeconfig []byte
	eventually(t, "kubeconfig", 10*time.Second, func() error {
		var err error
		kubeconfig, err = c.Kubeconfig(nctx)
		return err
	})
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node registered in the real kube-apiserver", 3*time.Minute, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, m.Hostname, metav1.GetOptions{})
		if err == nil && n.Labels["node-role.kubernetes.io/control-plane"] != "" {
			return errors.New("not a control plane")
		}
		return err
	})

	// Deleting the server stops the node.
	if err := servers.Delete(ctx, compute, srv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node goes away with its server", 10*time.Second, func() error {
		vctx, cancel := context.WithTimeout(nctx, time.Second)
		defer cancel()
		if _, err := c.Version(vctx); err == nil {
			return errors.New("the node still answers")
		}
		return nil
	})
}

// loadCluster is a one-control-plane OpenStack cluster.yaml on cidr.
func loadCluster(t *testing.T, cidr string) *config.Cluster {
	t.Helper()
	dir := t.TempDir()
	data := `name: labtest
talos: {version: v1.13.8}
kubernetes: {version: v1.35.4}
controlplane: {count: 1, flavor: talos.cp, disk: 20}
openstack: {url: "http://127.0.0.1:1/v3", availability_zone: nova, external_net: public}
network:
  cluster: {cidr: ` + cidr + `}
  dns: []
  ntp: []
`
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
