package openstack_test

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/state"
)

// netCluster is what a test puts in cluster.yaml.
type netCluster struct {
	workers int
	mtu     string // network.cluster.mtu, "" for the default
	dns     string // network.dns
	kubeSrc string // the kubernetes rule's host
	cidr    string // network.cluster.cidr, "" for 127.16.0.0/24
}

func (n netCluster) yaml(url, region string) string {
	mtu, cidr := "", cmp.Or(n.cidr, "127.16.0.0/24")
	if n.mtu != "" {
		mtu = "\n    mtu: " + n.mtu
	}
	return fmt.Sprintf(`name: c
include: [secrets.yaml]
talos:
  version: v1.13.8
kubernetes:
  version: v1.35.4
controlplane:
  count: 3
  flavor: talos.cp
  disk: 20
workers:
  worker:
    count: %d
    flavor: talos.worker
    disk: 20
openstack:
  url: %s
  allow_http: true
  availability_zone: nova
  external_net: public
  region: %s
network:
  cluster:
    cidr: %s%s
  dns: %s
  ntp: [127.0.0.123]
security:
  kubernetes:
    lab: %s
  talos:
    lab: 127.0.0.0/8
`, n.workers, url, region, cidr, mtu, n.dns, n.kubeSrc)
}

// netLab is a lab OpenStack, a cluster directory and a connected Cloud.
type netLab struct {
	lab   *labos.Cloud
	rec   *labnet.Recorder
	cloud *openstack.Cloud
	dir   string
	cred  labos.AppCredential
	logs  *syncBuffer
	// cfg is the cluster the cloud is connected for, spec its network.
	cfg  *config.Cluster
	spec provider.NetworkSpec
	// opts are the Options every configure connects with.
	opts openstack.Options
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.b, format+"\n", args...)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// equateAddr compares netip.Addr values with ==.
var equateAddr = cmpopts.EquateComparable(netip.Addr{})

var defaultNet = netCluster{workers: 2, mtu: "1450", dns: "[127.0.0.53]", kubeSrc: "127.0.0.0/8"}

func newNetLab(t *testing.T, cfg labos.Config, o openstack.Options, c netCluster) *netLab {
	t.Helper()
	cfg.OnUnhandled = func(service, method, path string) { t.Errorf("unhandled %s %s %s", service, method, path) }
	cfg.Recorder = &labnet.Recorder{}
	lab, err := labos.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Close() })
	cred, err := lab.CreateApplicationCredential("demo", "talosc-net")
	if err != nil {
		t.Fatal(err)
	}
	l := &netLab{lab: lab, rec: cfg.Recorder, dir: t.TempDir(), cred: cred, logs: &syncBuffer{}}
	o.Poll, o.Logf = 20*time.Millisecond, l.logs.printf
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	l.opts = o
	l.configure(t, c)
	l.rec.Reset()
	return l
}

// loadCluster writes clusterYAML and a secrets.yaml holding cred into dir
// and loads them, as a run does.
func loadCluster(t *testing.T, dir, clusterYAML string, cred labos.AppCredential) *config.Cluster {
	t.Helper()
	secrets := fmt.Sprintf("openstack:\n  credential_id: %s\n  credential_secret: %s\n", cred.ID, cred.Secret)
	for name, data := range map[string]string{"cluster.yaml": clusterYAML, "secrets.yaml": secrets} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configure writes cluster.yaml, reloads it and connects for it, as a
// user's edit and the next run do.
func (l *netLab) configure(t *testing.T, c netCluster) {
	t.Helper()
	cfg := loadCluster(t, l.dir, c.yaml(l.lab.AuthURL(), l.lab.Region()), l.cred)
	var spec provider.NetworkSpec
	for _, m := range cfg.Hostnames() {
		spec.Machines = append(spec.Machines, provider.MachineNet{Hostname: m.Hostname, Role: m.Role, Pool: m.Pool})
	}
	l.cfg, l.spec = cfg, spec
	var err error
	if l.cloud, err = openstack.Connect(t.Context(), cfg, l.opts); err != nil {
		t.Fatal(err)
	}
}

func (l *netLab) reconcile(t *testing.T, dryRun bool) (*provider.NetworkResult, []state.Change) {
	t.Helper()
	plan := &provider.Plan{DryRun: dryRun}
	res, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, plan)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res, plan.Changes()
}

// owned counts the lab's resources carrying the ownership tags of cluster c.
func (l *netLab) owned() map[string]int {
	return l.lab.Owned(openstack.TagManagedBy, openstack.ClusterTag("c"))
}

func neutronMutations(rec *labnet.Recorder) []string {
	var out []string
	for _, c := range rec.Mutations() {
		if c.Service == labos.Neutron {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

func changeNames(cs []state.Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s %s (%s)", c.Action, c.Kind, c.Name, c.Detail))
	}
	return out
}

func TestReconcileNetwork_BuildsFromNothing(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	res, changes := l.reconcile(t, false)

	want := map[string]int{"networks": 1, "subnets": 1, "routers": 1, "ports": 7, "floatingips": 2, "security_groups": 1}
	if diff := gocmp.Diff(want, l.owned()); diff != "" {
		t.Errorf("owned resources (-want +got):\n%s", diff)
	}
	var rules int
	for _, c := range changes {
		if c.Kind == "openstack:security-group-rule" {
			rules++
		}
	}
	// icmp, tcp/80, tcp/443, tcp/6443, tcp/50000, tcp and udp from the group.
	if rules != 7 {
		t.Errorf("created %d rules, want 7:\n%s", rules, strings.Join(changeNames(changes), "\n"))
	}
	if res.Network == "" || res.Subnet == "" || res.SecurityGroup == "" {
		t.Errorf("result lacks ids: %+v", res)
	}
	for _, ep := range []provider.Endpoint{res.Kubernetes, res.Ingress} {
		if !ep.VIP.IsValid() || ep.Reserved == "" || !netip.MustParseAddr(ep.Advertised).IsLoopback() {
			t.Errorf("endpoint %+v is not complete", ep)
		}
	}
	if len(res.Machines) != 5 {
		t.Fatalf("got %d machines, want 5", len(res.Machines))
	}
	for _, m := range res.Machines {
		if m.Attachment == "" || !m.Address.IsLoopback() {
			t.Errorf("machine %+v has no port", m)
		}
		// The VIP ports were created first: Neutron gave them the lowest addresses.
		if !res.Kubernetes.VIP.Less(m.Address) || !res.Ingress.VIP.Less(m.Address) {
			t.Errorf("machine %s got %s, below a VIP (%s, %s)", m.Hostname, m.Address, res.Kubernetes.VIP, res.Ingress.VIP)
		}
	}
	inv := l.lab.Inventory()
	assoc := map[string]string{}
	for _, f := range inv.FloatingIPs {
		name, _, _ := strings.Cut(f.Description, " ")
		assoc[name] = f.PortID
	}
	if assoc["c-kubeapi"] != res.Kubernetes.Reserved || assoc["c-ingress"] != res.Ingress.Reserved {
		t.Errorf("floating ips point at %v, want the reserved ports %s and %s", assoc, res.Kubernetes.Reserved, res.Ingress.Reserved)
	}
	pairs := map[string][]string{}
	for _, p := range inv.Ports {
		for _, ap := range p.AllowedAddressPairs {
			pairs[p.Name] = append(pairs[p.Name], ap.IPAddress)
		}
	}
	if got := pairs["c-controlplane-01"]; !slices.Equal(got, []string{res.Kubernetes.VIP.String()}) {
		t.Errorf("control plane pairs %v, want the kubeapi VIP %s", got, res.Kubernetes.VIP)
	}
	if got := pairs["c-worker-01"]; !slices.Equal(got, []string{res.Ingress.VIP.String()}) {
		t.Errorf("worker pairs %v, want the ingress VIP %s", got, res.Ingress.VIP)
	}

	cur, err := l.cloud.CurrentNetwork(t.Context(), l.spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(res, cur, equateAddr); diff != "" {
		t.Errorf("CurrentNetwork differs from the reconcile's result (-reconcile +current):\n%s", diff)
	}
}

func TestReconcileNetwork_SecondRunChangesNothing(t *testing.T) {
	for _, workers := range []int{0, 47} {
		t.Run(fmt.Sprintf("%d machines", workers+3), func(t *testing.T) {
			c := defaultNet
			c.workers = workers
			l := newNetLab(t, labos.Config{}, openstack.Options{}, c)
			first, _ := l.reconcile(t, false)
			l.rec.Reset()
			second, changes := l.reconcile(t, false)
			if len(changes) != 0 {
				t.Errorf("second run changed:\n%s", strings.Join(changeNames(changes), "\n"))
			}
			if m := l.rec.Mutations(); len(m) != 0 {
				t.Errorf("second run made %d mutating calls: %v", len(m), m)
			}
			calls := l.rec.Calls()
			t.Logf("no-op reconcile of %d machines: %d calls", workers+3, len(calls))
			if len(calls) > 8 {
				t.Errorf("no-op reconcile of %d machines made %d calls, want at most 8", workers+3, len(calls))
			}
			if diff := gocmp.Diff(first, second, equateAddr); diff != "" {
				t.Errorf("results differ (-first +second):\n%s", diff)
			}
		})
	}
}

func TestReconcileNetwork_DNSChangeUpdatesTheSubnetInPlace(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	c := defaultNet
	c.dns = "[127.0.0.54, 127.0.0.55]"
	l.configure(t, c)
	l.rec.Reset()
	_, changes := l.reconcile(t, false)
	want := []state.Change{{Action: state.ActionUpdate, Kind: "openstack:subnet", Name: "c-subnet", Detail: "dns 127.0.0.53 -> 127.0.0.54,127.0.0.55"}}
	if diff := gocmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got := neutronMutations(l.rec); len(got) != 1 || !strings.HasPrefix(got[0], "PUT /v2.0/subnets/") {
		t.Errorf("mutating calls %v, want one subnet update", got)
	}
}

func TestReconcileNetwork_RuleChangeAddsBeforeDeleting(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	c := defaultNet
	c.kubeSrc = "127.1.0.0/16"
	l.configure(t, c)
	l.rec.Reset()
	_, changes := l.reconcile(t, false)
	want := []state.Change{
		{Action: state.ActionCreate, Kind: "openstack:security-group-rule", Name: "tcp/6443 from 127.1.0.0/16"},
		{Action: state.ActionDelete, Kind: "openstack:security-group-rule", Name: "tcp/6443 from 127.0.0.0/8"},
	}
	if diff := gocmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	got := neutronMutations(l.rec)
	if len(got) != 2 || got[0] != "POST /v2.0/security-group-rules" || !strings.HasPrefix(got[1], "DELETE /v2.0/security-group-rules/") {
		t.Errorf("mutating calls %v, want the new rule created before the old one is deleted", got)
	}
}

func TestReconcileNetwork_DryRunPlansWhatARunDoes(t *testing.T) {
	planned := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	res, dry := planned.reconcile(t, true)
	if m := planned.rec.Mutations(); len(m) != 0 {
		t.Errorf("dry run made %d mutating calls: %v", len(m), m)
	}
	if diff := gocmp.Diff(&provider.NetworkResult{Machines: res.Machines, Project: res.Project}, res, equateAddr); diff != "" || res.Machines[0].Attachment != "" || res.Project == "" {
		t.Errorf("dry run on an empty cloud returned ids:\n%s", diff)
	}
	applied := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	_, real := applied.reconcile(t, false)
	if diff := gocmp.Diff(real, dry); diff != "" {
		t.Errorf("dry run plan differs from the real run's changes (-real +dry):\n%s", diff)
	}
}

func TestReconcileNetwork_RefusesUnownedNetworkBeforeAnyChange(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.createForeignNetwork(t, "c-net", "")
	l.rec.Reset()
	_, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "refusing to adopt unowned network c-net (") ||
		!strings.Contains(err.Error(), "it lacks the ownership tags managed-by=taloscluster and cluster=c") {
		t.Fatalf("err = %v, want the refusal", err)
	}
	if m := l.rec.Mutations(); len(m) != 0 {
		t.Errorf("refusal made %d mutating calls: %v", len(m), m)
	}
}

// createForeignNetwork creates an untagged network as another user of the
// project would.
func (l *netLab) createForeignNetwork(t *testing.T, name, description string) {
	t.Helper()
	pc, err := gos.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: l.lab.AuthURL(), Username: "demo", Password: labos.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := gos.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: l.lab.Region()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := networks.Create(t.Context(), nc, networks.CreateOpts{Name: name, Description: description}).Extract(); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileNetwork_AddingAWorkerAddsOnePort(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	c := defaultNet
	c.workers = 3
	l.configure(t, c)
	l.rec.Reset()
	res, changes := l.reconcile(t, false)
	want := []state.Change{{Action: state.ActionCreate, Kind: "openstack:port", Name: "c-worker-03", Detail: "pair ingress VIP"}}
	if diff := gocmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if last := res.Machines[len(res.Machines)-1]; last.Hostname != "c-worker-03" || last.Attachment == "" {
		t.Errorf("new worker %+v has no port", last)
	}
	if got := l.owned()["ports"]; got != 8 {
		t.Errorf("%d owned ports, want 8", got)
	}
}

func TestReconcileNetwork_ReclaimsOrphanPortsWithoutServer(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	c := defaultNet
	c.workers = 1
	l.configure(t, c)
	_, changes := l.reconcile(t, false)
	want := []state.Change{{Action: state.ActionDelete, Kind: "openstack:port", Name: "c-worker-02"}}
	if diff := gocmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	// 2 reserved, 3 control planes, 1 worker.
	if got := l.owned()["ports"]; got != 6 {
		t.Errorf("%d owned ports, want 6", got)
	}
}

func TestDestroyNetwork_LeavesNothingOwned(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.DestroyNetwork(t.Context(), dry); err != nil {
		t.Fatal(err)
	}
	plan := &provider.Plan{}
	if err := l.cloud.DestroyNetwork(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(plan.Changes(), dry.Changes()); diff != "" {
		t.Errorf("destroy plan differs from destroy (-real +dry):\n%s", diff)
	}
	if got := l.owned(); len(got) != 0 {
		t.Errorf("owned resources left: %v", got)
	}
	// 2 floating ips, 7 ports, 1 router interface, router, subnet, network, group.
	if len(plan.Changes()) != 14 {
		t.Errorf("destroy made %d changes, want 14:\n%s", len(plan.Changes()), strings.Join(changeNames(plan.Changes()), "\n"))
	}
	if err := l.cloud.DestroyNetwork(t.Context(), &provider.Plan{}); err != nil {
		t.Errorf("second destroy: %v", err)
	}
}

func TestReconcileNetwork_ConvergesThroughTransientErrors(t *testing.T) {
	inj := labnet.NewInjector(labnet.Knobs{ErrorRate: 0.05, Seed: 7})
	l := newNetLab(t, labos.Config{Injector: inj}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	var faults int
	for _, c := range l.rec.Calls() {
		if c.Status == http.StatusServiceUnavailable {
			faults++
		}
	}
	if faults == 0 {
		t.Error("no fault was injected; pick another seed")
	}
	inj.Set(labnet.Knobs{})
	if _, changes := l.reconcile(t, false); len(changes) != 0 {
		t.Errorf("converged network still changes:\n%s", strings.Join(changeNames(changes), "\n"))
	}
}

func TestReconcileNetwork_DefaultMTUAboveTheCloudsNamesTheKey(t *testing.T) {
	c := defaultNet
	c.mtu = ""
	l := newNetLab(t, labos.Config{}, openstack.Options{}, c)
	_, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "network.cluster.mtu 1500") {
		t.Fatalf("err = %v, want one naming network.cluster.mtu", err)
	}
}

// dropTags plays a Neutron that accepts tags and forgets them.
type dropTags struct{ next http.RoundTripper }

func (d dropTags) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tags") {
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(`{"tags": []}`))
		resp.ContentLength = -1
	}
	return resp, err
}

func TestReconcileNetwork_DeletesWhatNeutronDidNotTag(t *testing.T) {
	o := openstack.Options{HTTPClient: &http.Client{Transport: dropTags{http.DefaultTransport}}}
	l := newNetLab(t, labos.Config{}, o, defaultNet)
	_, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "Neutron did not persist ownership tags on security group c") {
		t.Fatalf("err = %v, want the I-F2 failure", err)
	}
	if got := l.lab.Inventory().SecurityGroups; slices.ContainsFunc(got, func(g labos.SecurityGroup) bool { return g.Name == "c" }) {
		t.Error("the untagged security group was left behind")
	}
}
