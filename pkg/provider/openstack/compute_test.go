package openstack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/imagefactory/imagefactorytest"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/talos/factory"
)

const labTalos = "v1.13.8"

// computeLab is a lab OpenStack, a talosc session on it as the demo
// project's application credential, and the demo user's own clients for
// what the test sets up (networks and ports: the network half's job).
type computeLab struct {
	lab     *labos.Cloud
	cloud   *openstack.Cloud
	cfg     *config.Cluster
	dir     string
	cred    labos.AppCredential
	compute *gophercloud.ServiceClient
	network *gophercloud.ServiceClient
	image   *gophercloud.ServiceClient
	logs    *syncBuffer
}

// clusterYAML is a cluster named "c" with pools (YAML for controlplane and
// workers) and an availability zone.
func clusterYAML(url, region, zone, pools string) string {
	return fmt.Sprintf(`name: c
include: [secrets.yaml]
talos:
  version: %s
kubernetes:
  version: v1.35.4
%s
openstack:
  url: %s
  allow_http: true
  availability_zone: %s
  external_net: public
  region: %s
network:
  cluster:
    cidr: 127.16.0.0/24
  dns: []
  ntp: [127.0.0.123]
security:
  kubernetes:
    lab: 127.0.0.0/8
  talos:
    lab: 127.0.0.0/8
`, labTalos, pools, url, zone, region)
}

const threeCPs = `controlplane:
  count: 3
  flavor: talos.cp
  disk: 20`

func newComputeLab(t *testing.T, cfg labos.Config, pools string) *computeLab {
	t.Helper()
	cfg.OnUnhandled = func(service, method, path string) { t.Errorf("unhandled %s %s %s", service, method, path) }
	lab, err := labos.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Close() })
	cred, err := lab.CreateApplicationCredential("demo", "talosc-test")
	if err != nil {
		t.Fatal(err)
	}
	l := &computeLab{lab: lab, cred: cred, dir: t.TempDir(), logs: &syncBuffer{}}
	l.reconfigure(t, "nova", pools)
	l.compute, l.network, l.image = demoClients(t, lab)
	return l
}

// demoClients are the demo user's own compute (microversion 2.52),
// network and image clients, for what a test sets up outside talosc.
func demoClients(t *testing.T, lab *labos.Cloud) (compute, network, image *gophercloud.ServiceClient) {
	t.Helper()
	pc, err := gos.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: lab.AuthURL(), Username: "demo", Password: labos.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: lab.Region()}
	if compute, err = gos.NewComputeV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	compute.Microversion = "2.52"
	if network, err = gos.NewNetworkV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if image, err = gos.NewImageV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	return compute, network, image
}

// reconfigure rewrites cluster.yaml, reloads it and connects for it
// (what a user's edit and the next run do).
func (l *computeLab) reconfigure(t *testing.T, zone, pools string) {
	t.Helper()
	l.cfg = loadCluster(t, l.dir, clusterYAML(l.lab.AuthURL(), l.lab.Region(), zone, pools), l.cred)
	var err error
	l.cloud, err = openstack.Connect(t.Context(), l.cfg, openstack.Options{
		Poll: 20 * time.Millisecond, Wait: 5 * time.Second,
		Logf: l.logs.printf,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// imageSpec is the boot image served by a lab Image Factory.
func imageSpec(t *testing.T, fetchFrom string) provider.ImageSpec {
	t.Helper()
	f := imagefactorytest.NewServer(t, labTalos)
	c, err := factory.New(f.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
	if err != nil {
		t.Fatal(err)
	}
	if fetchFrom != "" {
		if c, err = factory.New(fetchFrom, factory.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return provider.ImageSpec{
		Name: factory.BootImageName(labTalos, id), TalosVersion: labTalos, SchematicID: id, Artifact: factory.ArtifactOpenStack,
		Fetch: func(ctx context.Context, dst io.Writer) (int64, error) {
			n, _, err := c.Download(ctx, id, labTalos, factory.ArtifactOpenStack, dst, -1, "")
			return n, err
		},
	}
}

// machineSpecs makes the desired machines' ports (tagged like the network
// half's) and returns their specs, booting from img.
func (l *computeLab) machineSpecs(t *testing.T, img provider.Image) []provider.MachineSpec {
	t.Helper()
	nets, err := networks.List(l.network, networks.ListOpts{Name: "c-net"}).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found, _ := networks.ExtractNetworks(nets)
	var netID string
	if len(found) > 0 {
		netID = found[0].ID
	} else {
		n, err := networks.Create(t.Context(), l.network, networks.CreateOpts{Name: "c-net"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := subnets.Create(t.Context(), l.network, subnets.CreateOpts{NetworkID: n.ID, Name: "c-subnet", CIDR: "127.16.0.0/24", IPVersion: gophercloud.IPv4}).Extract(); err != nil {
			t.Fatal(err)
		}
		netID = n.ID
	}
	var specs []provider.MachineSpec
	for _, m := range l.cfg.Hostnames() {
		p, err := ports.Create(t.Context(), l.network, ports.CreateOpts{NetworkID: netID, Name: m.Hostname}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, provider.MachineSpec{
			Machine: m, Config: []byte("version: v1alpha1\n# machine config of " + m.Hostname + "\n"), Image: img,
			Attachment: provider.MachineAddress{Hostname: m.Hostname, Address: netip.MustParseAddr(p.FixedIPs[0].IPAddress), Attachment: p.ID},
		})
	}
	return specs
}

// boot ensures the image and creates every desired machine.
func (l *computeLab) boot(t *testing.T) ([]provider.MachineSpec, []provider.Machine) {
	t.Helper()
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	specs := l.machineSpecs(t, img)
	got, err := l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	return specs, got
}

func hostnames(ms []provider.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Hostname
	}
	return out
}

func TestCreateMachines_BootsFromVolumeWithConfigDriveAndTags(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs+`
workers:
  worker:
    count: 2
    flavor: "4"
    disk: 30`)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	specs := l.machineSpecs(t, img)
	l.lab.Recorder().Reset()
	plan := &provider.Plan{}
	got, err := l.cloud.CreateMachines(t.Context(), specs, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c-controlplane-01", "c-controlplane-02", "c-controlplane-03", "c-worker-01", "c-worker-02"}
	if diff := cmp.Diff(want, hostnames(got)); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}
	if c := plan.Changes(); len(c) != 5 || c[0].Kind != openstack.KindServer || !strings.HasPrefix(c[0].Detail, "flavor talos.") {
		t.Errorf("changes = %+v", c)
	}
	// Every create was sent before the first poll: the creates did not
	// wait for each other's boot.
	calls := l.lab.Recorder().Calls()
	lastPost := -1
	for i, c := range calls {
		if c.Method == http.MethodPost && strings.HasSuffix(c.Path, "/servers") {
			lastPost = i
		}
	}
	firstPoll := slices.IndexFunc(calls, func(c labnet.Call) bool { return strings.HasSuffix(c.Path, "/servers/detail") })
	if lastPost < 0 || firstPoll < lastPost {
		t.Errorf("creates and polls interleave: last POST #%d, first poll #%d", lastPost, firstPoll)
	}

	inv := l.lab.Inventory()
	for i, s := range inv.Servers {
		spec := specs[slices.IndexFunc(specs, func(sp provider.MachineSpec) bool { return sp.Machine.Hostname == s.Name })]
		ud, err := base64.StdEncoding.DecodeString(s.UserData)
		if err != nil || !bytes.Equal(ud, spec.Config) {
			t.Errorf("%s: user_data %q does not decode to its machine config (%v)", s.Name, s.UserData, err)
		}
		wantTags := []string{"cluster=c", "managed-by=taloscluster", "pool=" + spec.Machine.Pool, openstack.ProjectTag(s.ProjectID), "role=" + spec.Machine.Role}
		if !s.ConfigDrive || s.Zone != "nova" || s.ImageID != "" || !slices.Equal(s.Ports, []string{spec.Attachment.Attachment}) || !slices.Equal(s.Tags, wantTags) {
			t.Errorf("server %d = %+v", i, s)
		}
		if len(s.Volumes) != 1 || !s.Volumes[0].DeleteOnTermination {
			t.Errorf("%s: volumes %+v, want one boot volume deleted with it", s.Name, s.Volumes)
		}
	}
	wantDisk := map[string]int{}
	for _, v := range inv.Volumes {
		if v.ImageID != img.ID {
			t.Errorf("volume %s of image %s, want %s", v.ID, v.ImageID, img.ID)
		}
		wantDisk[v.ServerID] = v.Size
	}
	for _, m := range got {
		if m.Status != "ACTIVE" || m.DiskGB != wantDisk[m.ID] || !m.Address.IsValid() {
			t.Errorf("machine %+v", m)
		}
	}
	if got[3].DiskGB != 30 || got[3].Flavor != "talos.worker" || got[0].Flavor != "talos.cp" {
		t.Errorf("flavor id 4 / disk 30: %+v, %+v", got[0], got[3])
	}
}

func TestInventory_FindsOwnedServersOnly(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	specs, created := l.boot(t)
	// Same names, not ours: no tags; another cluster's; the legacy marker
	// (ours).
	foreign := []struct {
		name string
		tags []string
	}{
		{"c-controlplane-01", nil},
		{"c-controlplane-02", []string{"managed-by=taloscluster", "cluster=other"}},
		{"c-legacy-01", []string{"managed-by=clusterctl", "cluster=c", "role=worker", "pool=legacy"}},
	}
	for _, f := range foreign {
		if _, err := servers.Create(t.Context(), l.compute, servers.CreateOpts{
			Name: f.name, FlavorRef: "3", ImageRef: specs[0].Image.ID, Networks: "none", Tags: f.tags,
		}, nil).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	l.lab.Recorder().Reset()
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.lab.Recorder().Calls()); n != 2 {
		t.Errorf("Inventory made %d calls, want 2 (one server list, one volume list)", n)
	}
	want := append(hostnames(created), "c-legacy-01")
	slices.Sort(want)
	if diff := cmp.Diff(want, inv.Hostnames()); diff != "" {
		t.Fatalf("inventory (-want +got):\n%s", diff)
	}
	m, _ := inv.Find("c-controlplane-01")
	wantM := created[0]
	wantM.Status = "ACTIVE"
	if diff := cmp.Diff(wantM, m, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("c-controlplane-01 (-want +got):\n%s", diff)
	}
	if m.Role != "controlplane" || m.Pool != "controlplane" || m.Flavor != "talos.cp" || m.DiskGB != 20 || m.Zone != "nova" || m.Address != specs[0].Attachment.Address {
		t.Errorf("c-controlplane-01 = %+v", m)
	}
}

func TestInventory_FiftyServersTakeTwoCalls(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{BootDelay: 5 * time.Millisecond}, `controlplane:
  count: 1
  flavor: talos.cp
  disk: 20
workers:
  worker:
    count: 49
    flavor: talos.worker
    disk: 20`)
	start := time.Now()
	_, created := l.boot(t)
	t.Logf("created %d servers in %s", len(created), time.Since(start))
	l.lab.Recorder().Reset()
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil || len(inv.Machines) != 50 {
		t.Fatalf("Inventory = %d machines, %v", len(inv.Machines), err)
	}
	if n := len(l.lab.Recorder().Calls()); n != 2 {
		t.Errorf("Inventory of 50 servers made %d calls, want 2", n)
	}
	for _, m := range inv.Machines {
		if m.DiskGB != 20 || m.Flavor == "" || !m.Address.IsValid() {
			t.Fatalf("machine %+v", m)
		}
	}
}

func TestCreateMachines_OneServerInErrorDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{FailBoot: func(name string) bool { return name == "c-controlplane-02" }}, threeCPs)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.cloud.CreateMachines(t.Context(), l.machineSpecs(t, img), &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "server c-controlplane-02 (") || !strings.Contains(err.Error(), "went to ERROR: Build of instance") {
		t.Fatalf("err = %v, want c-controlplane-02's Nova fault", err)
	}
	if diff := cmp.Diff([]string{"c-controlplane-01", "c-controlplane-03"}, hostnames(got)); diff != "" {
		t.Errorf("booted (-want +got):\n%s", diff)
	}
}

func TestCreateMachines_RefusesBeforeMutating(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs+`
workers:
  gpu:
    count: 1
    flavor: talos.nope
    disk: 20`)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	specs := l.machineSpecs(t, img)
	specs[0].Config = bytes.Repeat([]byte("#"), 64<<10)
	l.lab.Recorder().Reset()
	_, err = l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	for _, want := range []string{
		`server c-gpu-01: workers.gpu.flavor: flavor "talos.nope" is neither the name nor the id of a flavor of this project`,
		"server c-controlplane-01: machine config is 65536 bytes, 87384 in base64, over Nova's user_data limit of 65535",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant %q", err, want)
		}
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
}

func TestCreateMachines_DryRunMutatesNothing(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	specs := l.machineSpecs(t, provider.Image{Name: "planned"})
	l.lab.Recorder().Reset()
	plan := &provider.Plan{DryRun: true}
	got, err := l.cloud.CreateMachines(t.Context(), specs, plan)
	if err != nil {
		t.Fatal(err)
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
	if len(plan.Changes()) != 3 || len(got) != 3 || got[0].Flavor != "talos.cp" || got[0].DiskGB != 20 || got[0].ID != "" {
		t.Errorf("changes %+v, machines %+v", plan.Changes(), got)
	}
}

func TestValidateMachines_RefusesCreateOnlyChanges(t *testing.T) {
	t.Parallel()
	flavors := append(labos.DefaultFlavors(), labos.Flavor{ID: "9", Name: "talos.big", VCPUs: 8, RAM: 16384, Disk: 40})
	l := newComputeLab(t, labos.Config{Flavors: flavors, Zones: []string{"nova", "az2"}}, threeCPs+`
workers:
  worker:
    count: 2
    flavor: talos.worker
    disk: 20`)
	_, created := l.boot(t)
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The same flavor by id is no change.
	l.reconfigure(t, "nova", strings.Replace(threeCPs, "talos.cp", `"3"`, 1))
	l.lab.Recorder().Reset()
	if err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv); err != nil {
		t.Fatalf("flavor by id: %v", err)
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
	l.reconfigure(t, "az2", strings.Replace(threeCPs, "disk: 20", "disk: 40", 1)+`
workers:
  worker:
    count: 3
    flavor: talos.big
    disk: 20`)
	l.lab.Recorder().Reset() // the next run's token
	err = l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv)
	want := []string{
		"controlplane.disk changed from 20 to 40 for existing server(s) c-controlplane-01, c-controlplane-02, c-controlplane-03; boot volumes are create-only on OpenStack: revert controlplane.disk or recreate those machines",
		"openstack.availability_zone changed from nova to az2 for existing server(s) c-controlplane-01, c-controlplane-02, c-controlplane-03, c-worker-01, c-worker-02; availability zones are create-only on OpenStack: revert openstack.availability_zone or recreate those machines",
		"workers.worker.flavor changed from talos.worker to talos.big for existing server(s) c-worker-01, c-worker-02; flavors are create-only on OpenStack: revert workers.worker.flavor or recreate those machines",
	}
	if err == nil {
		t.Fatal("no refusal")
	}
	got := strings.Split(err.Error(), "\n")
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
	if len(created) != 5 {
		t.Errorf("created %d", len(created))
	}
}

func TestDestroyMachines_DeletesEveryOwnedServerAndWaits(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{DeleteDelay: 60 * time.Millisecond}, threeCPs)
	l.boot(t)
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l.lab.Recorder().Reset()
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DestroyMachines(t.Context(), inv, dry); err != nil || len(dry.Changes()) != 3 {
		t.Fatalf("dry run: %v, %+v", err, dry.Changes())
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("dry run mutations: %+v", m)
	}
	if err := l.cloud.DestroyMachines(t.Context(), inv, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if inv := l.lab.Inventory(); len(inv.Servers) != 0 || len(inv.Volumes) != 0 {
		t.Errorf("left %d servers, %d volumes", len(inv.Servers), len(inv.Volumes))
	}
}
