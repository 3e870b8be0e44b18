package lab_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/siderolabs/talos/pkg/machinery/client"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/follow"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// realOpenStackEnv names the clouds.yaml of a real OpenStack (the real lab
// writes /opt/oslab/clouds.yaml with clouds "oslab", admin, and
// "oslab-demo", member); TestFollowRealOpenStack runs only when it is set.
const realOpenStackEnv = "TALOSC_REAL_OPENSTACK"

// TestFollowFakeOpenStack follows the lab's own simulated OpenStack as if it
// were a real one: a server carrying a real machine config boots a node the
// follower manages, its floating IP is served as NAT, and deleting the
// server stops the node.
func TestFollowFakeOpenStack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The cloud outlives t.Context: the cleanups still talk to it.
	cloud, err := openstack.Start(context.WithoutCancel(ctx), openstack.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.Close() })
	auth := func(user string) gophercloud.AuthOptions {
		return gophercloud.AuthOptions{
			IdentityEndpoint: cloud.AuthURL(), Username: user, Password: openstack.DefaultPassword, DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: user, DomainName: "Default"},
		}
	}
	followTest(t, auth("admin"), auth("demo"), "127.16.88.0/24", 20*time.Millisecond)
}

// TestFollowRealOpenStack is the same against a real OpenStack: set
// TALOSC_REAL_OPENSTACK to its clouds.yaml (clouds "oslab" and "oslab-demo",
// as ../shared/openstack-lab/up.sh writes to /opt/oslab/clouds.yaml).
func TestFollowRealOpenStack(t *testing.T) {
	t.Parallel()
	path := os.Getenv(realOpenStackEnv)
	if path == "" {
		t.Skipf("no real OpenStack: set %s to the clouds.yaml of ../shared/openstack-lab (e.g. /opt/oslab/clouds.yaml) after its up.sh", realOpenStackEnv)
	}
	admin, err := follow.FromClouds(path, "oslab")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := follow.FromClouds(path, "oslab-demo")
	if err != nil {
		t.Fatal(err)
	}
	cidr := fmt.Sprintf("127.44.%d.0/24", os.Getpid()%250)
	followTest(t, admin.Auth, demo.Auth, cidr, 500*time.Millisecond)
}

// followTest starts a lab following the cloud of admin, creates a Talos
// server there as user and checks its node's life.
func followTest(t *testing.T, admin, user gophercloud.AuthOptions, cidr string, interval time.Duration) {
	t.Helper()
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{
		Follow:    &follow.Options{Auth: admin, Interval: interval, CallTimeout: 10 * time.Second, Only: netip.MustParsePrefix(cidr)},
		NodesBoot: 10 * time.Millisecond, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	c := newCloudClients(t, user)
	srv := createTalosServer(t, c, cidr)

	id, err := identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := identity.Talosconfig(id, "labtest", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	tcl, err := client.New(ctx, client.WithConfig(tc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcl.Close() }()
	t0 := time.Now()
	nctx := client.WithNode(ctx, srv.addr)
	eventually(t, "the followed server's node answers over mTLS", 60*time.Second, func() error {
		_, err := tcl.Version(nctx)
		return err
	})
	up := time.Since(t0)
	if got := l.Follower.Nodes()[srv.id]; got.String() != srv.addr {
		t.Fatalf("follower nodes: %v, want %s at %s", l.Follower.Nodes(), srv.id, srv.addr)
	}

	fip, err := floatingips.Create(ctx, c.network, floatingips.CreateOpts{FloatingNetworkID: c.public, PortID: srv.port}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), c.network, fip.ID).ExtractErr() })
	eventually(t, "the floating IP forwards to apid", 60*time.Second, func() error {
		return tlsHandshake(ctx, net.JoinHostPort(fip.FloatingIP, "50000"))
	})
	if got := l.Follower.FloatingIPs()[netip.MustParseAddr(fip.FloatingIP)]; got.String() != srv.addr {
		t.Fatalf("floating IPs: %v", l.Follower.FloatingIPs())
	}

	natted := time.Since(t0)
	if err := servers.Delete(ctx, c.compute, srv.id).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node goes away with its server", 60*time.Second, func() error {
		vctx, cancel := context.WithTimeout(nctx, time.Second)
		defer cancel()
		if _, err := tcl.Version(vctx); err == nil {
			return errors.New("the node still answers")
		}
		return nil
	})
	t.Logf("after ACTIVE: node up %s, floating IP served %s, node stopped %s", up, natted, time.Since(t0))
}

// tlsHandshake completes a TLS handshake with addr: proof that a TLS server
// (apid) answers behind it.
func tlsHandshake(ctx context.Context, addr string) error {
	d := tls.Dialer{NetDialer: labnet.Dialer(), Config: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // only proves a TLS server answers through the NAT
		MinVersion:         tls.VersionTLS12,
	}}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := d.DialContext(cctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

// cloudClients are one user's service clients.
type cloudClients struct {
	compute, network, image *gophercloud.ServiceClient
	public                  string // the external network's ID
}

func newCloudClients(t *testing.T, ao gophercloud.AuthOptions) cloudClients {
	t.Helper()
	ctx := t.Context()
	pc, err := gos.AuthenticatedClient(ctx, ao)
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	var c cloudClients
	if c.compute, err = gos.NewComputeV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	c.compute.Microversion = "2.52"
	if c.network, err = gos.NewNetworkV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if c.image, err = gos.NewImageV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	page, err := networks.List(c.network, networks.ListOpts{Name: "public"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nets, err := networks.ExtractNetworks(page)
	if err != nil || len(nets) == 0 {
		t.Fatalf("external network public: %v %v", nets, err)
	}
	c.public = nets[0].ID
	return c
}

// talosServer is a Nova server running a control plane's machine config.
type talosServer struct{ id, addr, port string }

// createTalosServer creates a network on cidr, a port, an image and a
// server whose user_data is a real control plane's machine config; the
// network, port and image go at cleanup.
func createTalosServer(t *testing.T, c cloudClients, cidr string) talosServer {
	t.Helper()
	ctx := t.Context()
	bg := context.Background()
	name := fmt.Sprintf("follow-%d", time.Now().UnixNano())
	network, err := networks.Create(ctx, c.network, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(bg, c.network, network.ID).ExtractErr() })
	subnet, err := subnets.Create(ctx, c.network, subnets.CreateOpts{NetworkID: network.ID, CIDR: cidr, IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = subnets.Delete(bg, c.network, subnet.ID).ExtractErr() })
	router, err := routers.Create(ctx, c.network, routers.CreateOpts{Name: name, GatewayInfo: &routers.GatewayInfo{NetworkID: c.public}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = routers.Delete(bg, c.network, router.ID).ExtractErr() })
	if _, err := routers.AddInterface(ctx, c.network, router.ID, routers.AddInterfaceOpts{SubnetID: subnet.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = routers.RemoveInterface(bg, c.network, router.ID, routers.RemoveInterfaceOpts{SubnetID: subnet.ID}).Extract()
	})
	port, err := ports.Create(ctx, c.network, ports.CreateOpts{NetworkID: network.ID, Name: name + "-cp", FixedIPs: []ports.IP{{SubnetID: subnet.ID}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePort(c, port.ID) })
	addr := port.FixedIPs[0].IPAddress

	id, err := identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadCluster(t, cidr, 1, 0)
	m := cfg.Hostnames()[0]
	schematic, err := factory.BaseSchematic().ID()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := machineconfig.Generate(machineconfig.Input{
		Cluster: cfg, Secrets: id.Bundle(), AdvertisedAddress: addr, VIP: netip.MustParseAddr(addr),
		Installers: map[string]string{config.RoleControlPlane: factory.InstallerRef("factory.talos.dev", factory.PlatformOpenStack, schematic, cfg.Talos.Version, false)},
	}, machineconfig.Node{Machine: m, TalosVersion: cfg.Talos.Version, KubernetesVersion: cfg.Kubernetes.Version, MACs: []string{port.MACAddress}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Create(ctx, c.image, images.CreateOpts{Name: name, DiskFormat: "raw", ContainerFormat: "bare"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = images.Delete(bg, c.image, img.ID).ExtractErr() })
	if err := imagedata.Upload(ctx, c.image, img.ID, strings.NewReader("talos image")).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	flavor, err := flavorID(ctx, c.compute, "talos.cp")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := servers.Create(ctx, c.compute, servers.CreateOpts{
		Name: name, FlavorRef: flavor, ImageRef: img.ID, UserData: mc.Bytes(),
		Networks: []servers.Network{{Port: port.ID}},
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Delete(bg, c.compute, srv.ID).ExtractErr() })
	if err := servers.WaitForStatus(ctx, c.compute, srv.ID, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	return talosServer{id: srv.ID, addr: addr, port: port.ID}
}

// deletePort deletes a port once Nova has let go of it.
func deletePort(c cloudClients, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		err := ports.Delete(ctx, c.network, id).ExtractErr()
		if err == nil || gophercloud.ResponseCodeIs(err, 404) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func flavorID(ctx context.Context, compute *gophercloud.ServiceClient, name string) (string, error) {
	page, err := flavors.ListDetail(compute, nil).AllPages(ctx)
	if err != nil {
		return "", err
	}
	fs, err := flavors.ExtractFlavors(page)
	if err != nil {
		return "", err
	}
	for _, f := range fs {
		if f.Name == name {
			return f.ID, nil
		}
	}
	return "", fmt.Errorf("no flavor %s", name)
}

// TestFollowKeepsNodesWhenTheCloudFails shows that a failing or hanging
// cloud changes nothing: every call is bounded by CallTimeout, and a failed
// poll neither stops nodes nor boots new ones.
func TestFollowKeepsNodesWhenTheCloudFails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	inj := labnet.NewInjector(labnet.Knobs{Seed: 7})
	cloud, err := openstack.Start(context.WithoutCancel(ctx), openstack.Config{Injector: inj})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cloud.Close() })
	auth := func(user string) gophercloud.AuthOptions {
		return gophercloud.AuthOptions{
			IdentityEndpoint: cloud.AuthURL(), Username: user, Password: openstack.DefaultPassword, DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: user, DomainName: "Default"},
		}
	}
	const callTimeout = 200 * time.Millisecond
	l, err := lab.Start(ctx, lab.Options{
		Follow:    &follow.Options{Auth: auth("admin"), Interval: time.Hour, CallTimeout: callTimeout},
		NodesBoot: time.Millisecond, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	srv := createTalosServer(t, newCloudClients(t, auth("demo")), "127.16.89.0/24")
	if err := l.Follower.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]netip.Addr{srv.id: netip.MustParseAddr(srv.addr)}
	if diff := cmp.Diff(want, l.Follower.Nodes(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	if err := servers.Delete(ctx, newCloudClients(t, auth("demo")).compute, srv.id).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []labnet.Knobs{{ErrorRate: 1}, {HangRate: 1}} {
		inj.Set(k)
		start := time.Now()
		err := l.Follower.Sync(ctx)
		if err == nil {
			t.Fatalf("knobs %+v: Sync succeeded", k)
		}
		if d := time.Since(start); d > 3*callTimeout {
			t.Errorf("knobs %+v: Sync took %s, want it bounded by the call timeout %s", k, d, callTimeout)
		}
		if diff := cmp.Diff(want, l.Follower.Nodes(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
			t.Fatalf("knobs %+v: a failed poll changed the nodes (-want +got):\n%s", k, diff)
		}
	}
	inj.Set(labnet.Knobs{})
	eventually(t, "the node stops once the cloud answers again", 5*time.Second, func() error {
		if err := l.Follower.Sync(ctx); err != nil {
			return err
		}
		if n := l.Follower.Nodes(); len(n) != 0 {
			return fmt.Errorf("nodes %v", n)
		}
		return nil
	})
}
