package openstack_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/inventory"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/state"
)

// Audit H1: cluster c lives in project demo; another team's cluster of the
// same name runs with an application credential of a user who has the
// admin role, in project admin. Neutron and Nova show an admin every
// project's resources (the lab does the same), so nothing but the project
// tells the two clusters apart.

// scopeSpy is the admin session's transport. The cloud answers the
// admin's lists as OpenStack does (Neutron filters by project_id, Nova
// lists the project's servers) or, with ignore, as if it ignored the
// scoping: it drops project_id from Neutron lists and asks Nova for
// all_tenants, so every project's resources come back and talosc's own
// check of each resource's project is proven on its own. It records the
// Neutron lists of the project's resources sent without a project_id.
type scopeSpy struct {
	ignore bool
	mu     sync.Mutex
	// unscoped are the Neutron list queries that named no project.
	unscoped []string
}

func (s *scopeSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		req = req.Clone(req.Context())
		q := req.URL.Query()
		// The external network (openstack.external_net) is the cloud's, not
		// the project's: its lookup is read-only and names no project.
		neutronList := strings.Contains(req.URL.Path, "/v2.0/") && !q.Has("router:external") &&
			(q.Has("name") || q.Has("tags") || q.Has("description") || q.Has("network_id"))
		if neutronList && !q.Has("project_id") {
			s.mu.Lock()
			s.unscoped = append(s.unscoped, req.URL.Path+"?"+req.URL.RawQuery)
			s.mu.Unlock()
		}
		if s.ignore {
			q.Del("project_id")
			if strings.HasSuffix(req.URL.Path, "/servers/detail") {
				q.Set("all_tenants", "1")
			}
			req.URL.RawQuery = q.Encode()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// adminSession connects to lab as the admin user's application
// credential (project admin) with the cluster.yaml clusterYAML, through
// spy.
func adminSession(t *testing.T, lab *labos.Cloud, clusterYAML string, spy *scopeSpy) *openstack.Cloud {
	t.Helper()
	cred, err := lab.CreateApplicationCredential("admin", "other-team")
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadCluster(t, t.TempDir(), clusterYAML, cred)
	other, err := openstack.Connect(t.Context(), cfg, openstack.Options{
		Poll: 20 * time.Millisecond, Wait: 5 * time.Second, RequestTimeout: 5 * time.Second, HTTPClient: &http.Client{Transport: spy},
	})
	if err != nil {
		t.Fatal(err)
	}
	return other
}

// projectLines are the snapshot's resources of project.
func projectLines(s inventory.Snapshot, project string) inventory.Snapshot {
	return slices.DeleteFunc(slices.Clone(s), func(l string) bool { return !strings.Contains(l, " project="+project+" ") })
}

// eachScoping runs test once per scoping, with the spy the admin session
// is to use; where the cloud scopes the lists, it then fails when a
// Neutron list went out without the project.
func eachScoping(t *testing.T, test func(t *testing.T, spy *scopeSpy)) {
	t.Helper()
	for _, sc := range []struct {
		name   string
		ignore bool
	}{{"cloud scopes the lists", false}, {"cloud ignores the scoping", true}} {
		t.Run(sc.name, func(t *testing.T) {
			spy := &scopeSpy{ignore: sc.ignore}
			test(t, spy)
			if !sc.ignore && len(spy.unscoped) > 0 {
				t.Errorf("neutron lists sent without the credential's project_id:\n%s", strings.Join(spy.unscoped, "\n"))
			}
		})
	}
}

func TestDestroyNetwork_AnAdminOfAnotherProjectDeletesNothingOfIt(t *testing.T) {
	eachScoping(t, func(t *testing.T, spy *scopeSpy) {
		t.Helper()
		l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
		l.reconcile(t, false)
		// And an untagged network an older talosc left in project demo:
		// its marker names no project.
		l.createForeignNetwork(t, "c-net-old", "managed-by=taloscluster cluster=c")
		before := l.lab.Snapshot()
		other := adminSession(t, l.lab, defaultNet.yaml(l.lab.AuthURL(), l.lab.Region()), spy)
		dry := &provider.Plan{DryRun: true}
		if err := other.DestroyNetwork(t.Context(), dry); err != nil {
			t.Fatalf("dry-run destroy: %v", err)
		}
		plan := &provider.Plan{}
		if err := other.DestroyNetwork(t.Context(), plan); err != nil {
			t.Fatalf("destroy: %v", err)
		}
		if len(dry.Changes())+len(plan.Changes()) != 0 {
			t.Errorf("the admin-project destroy planned %v and made %v, want nothing: the network is project demo's", changeNames(dry.Changes()), changeNames(plan.Changes()))
		}
		if diff := inventory.Diff(projectLines(before, "demo"), projectLines(l.lab.Snapshot(), "demo")); len(diff) != 0 {
			t.Errorf("the admin-project destroy changed project demo:\n%s", strings.Join(diff, "\n"))
		}
	})
}

func TestReconcileNetwork_AnAdminOfAnotherProjectAdoptsNothingOfIt(t *testing.T) {
	eachScoping(t, func(t *testing.T, spy *scopeSpy) {
		t.Helper()
		l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
		l.reconcile(t, false)
		before := l.lab.Snapshot()
		other := adminSession(t, l.lab, defaultNet.yaml(l.lab.AuthURL(), l.lab.Region()), spy)
		spec := provider.NetworkSpec{Machines: l.spec.Machines}
		dry := &provider.Plan{DryRun: true}
		if _, err := other.ReconcileNetwork(t.Context(), spec, dry); err != nil {
			t.Fatalf("dry run: %v", err)
		}
		plan := &provider.Plan{}
		res, err := other.ReconcileNetwork(t.Context(), spec, plan)
		if err != nil {
			t.Fatalf("converge: %v", err)
		}
		for _, p := range []*provider.Plan{dry, plan} {
			if c := p.Changes(); len(c) == 0 || slices.ContainsFunc(c, func(c state.Change) bool { return c.Action != state.ActionCreate }) {
				t.Errorf("the admin-project converge planned %v, want its own network created from nothing", changeNames(c))
			}
		}
		if diff := inventory.Diff(projectLines(before, "demo"), projectLines(l.lab.Snapshot(), "demo")); len(diff) != 0 {
			t.Errorf("the admin-project converge changed project demo:\n%s", strings.Join(diff, "\n"))
		}
		adminNet := projectLines(l.lab.Snapshot(), "admin")
		if !slices.ContainsFunc(adminNet, func(l string) bool { return strings.HasPrefix(l, "network c-net ") }) || res.Project != "admin" {
			t.Errorf("the admin-project converge made no network c-net of its own (project %q):\n%s", res.Project, adminNet)
		}
	})
}

func TestInventory_AnAdminOfAnotherProjectFindsNoneOfItsServers(t *testing.T) {
	eachScoping(t, func(t *testing.T, spy *scopeSpy) {
		t.Helper()
		l := newScaleLab(t, 1)
		other := adminSession(t, l.lab, workersNet(1).yaml(l.lab.AuthURL(), l.lab.Region()), spy)
		inv, err := other.Inventory(t.Context())
		if err != nil || len(inv.Machines) != 0 {
			t.Errorf("the admin-project inventory = %v (%v), want none of project demo's servers", inv, err)
		}
		st, err := other.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"servers": 0, "ports": 0, "networks": 0, "subnets": 0, "routers": 0, "floatingips": 0, "security_groups": 0}
		if diff := cmp.Diff(want, st.Resources); diff != "" {
			t.Errorf("the admin-project status counts project demo's resources (-want +got):\n%s", diff)
		}
	})
}

func TestDeleteMachine_TouchesNothingOfAnotherProject(t *testing.T) {
	eachScoping(t, func(t *testing.T, spy *scopeSpy) {
		t.Helper()
		l := newScaleLab(t, 1)
		w1 := l.machine(t, "c-worker-01")
		other := adminSession(t, l.lab, workersNet(1).yaml(l.lab.AuthURL(), l.lab.Region()), spy)
		before := l.lab.Snapshot()
		plan := &provider.Plan{}
		err := other.DeleteMachine(t.Context(), w1, plan)
		if err == nil || !strings.Contains(err.Error(), "refusing to delete server c-worker-01 ("+w1.ID+"): it is of project ") || len(plan.Changes()) != 0 {
			t.Errorf("admin-project delete of demo's %s: %v (changes %v), want the refusal", w1.ID, err, changeNames(plan.Changes()))
		}
		// A machine of that name whose server is gone: its ports are
		// looked up by name, and demo's are not the admin's.
		gone := provider.Machine{Hostname: "c-worker-01", ID: "00000000-0000-0000-0000-000000000000"}
		plan = &provider.Plan{}
		if err := other.DeleteMachine(t.Context(), gone, plan); err != nil || len(plan.Changes()) != 0 {
			t.Errorf("admin-project delete of a gone c-worker-01: %v (changes %v), want nothing to do", err, changeNames(plan.Changes()))
		}
		if diff := inventory.Diff(before, l.lab.Snapshot()); len(diff) != 0 {
			t.Errorf("the admin-project deletes changed the lab:\n%s", strings.Join(diff, "\n"))
		}
	})
}

// A server made by an older talosc carries no project tag: it stays the
// cluster's in its project. One whose project tag names another project
// is not the cluster's.
func TestInventory_KeepsAnOlderTaloscsServerAndNotOneTaggedForAnotherProject(t *testing.T) {
	l := newScaleLab(t, 1)
	l.server(t, "c-worker-02", "", nodeTags("c-worker-02", "worker"))
	l.server(t, "c-worker-03", "", append(nodeTags("c-worker-03", "gpu"), "project=0123456789abcdef0123456789abcdef"))
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c-controlplane-01", "c-controlplane-02", "c-controlplane-03", "c-worker-01", "c-worker-02"}
	if diff := cmp.Diff(want, inv.Hostnames()); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
}

// A resource an older talosc made and could not tag carries the marker
// without the project: its project's run adopts and tags it.
func TestReconcileNetwork_AdoptsAnOlderTaloscsUntaggedNetworkOfItsProject(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.createForeignNetwork(t, "c-net", "managed-by=taloscluster cluster=c")
	_, changes := l.reconcile(t, false)
	if !slices.ContainsFunc(changes, func(c state.Change) bool {
		return c.Action == state.ActionUpdate && c.Kind == "openstack:network" && c.Name == "c-net"
	}) || slices.ContainsFunc(changes, func(c state.Change) bool { return c.Kind == "openstack:network" && c.Action == state.ActionCreate }) {
		t.Errorf("changes %v, want c-net adopted and tagged", changeNames(changes))
	}
}

// The marker of a resource talosc makes names its project.
func TestReconcileNetwork_MarkerNamesTheProject(t *testing.T) {
	l := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	l.reconcile(t, false)
	inv := l.lab.Inventory()
	demo := inv.Projects[slices.IndexFunc(inv.Projects, func(p labos.Project) bool { return p.Name == "demo" })].ID
	want := "managed-by=taloscluster cluster=c project=" + demo
	for _, n := range inv.Networks {
		if n.Name == "c-net" && n.Description != want {
			t.Errorf("network c-net is described %q, want %q", n.Description, want)
		}
	}
	for _, f := range inv.FloatingIPs {
		if !strings.HasSuffix(f.Description, " ("+want+")") {
			t.Errorf("floating ip %s is described %q, want its name and (%s)", f.ID, f.Description, want)
		}
	}
}
