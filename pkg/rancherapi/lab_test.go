package rancherapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/rancher"
	"github.com/talosc/talosc/pkg/rancherapi"
)

// labRancher starts a lab Rancher with faults inj and a client trusting it.
func labRancher(t *testing.T, inj *labnet.Injector) (*rancher.Server, *rancherapi.Client) {
	t.Helper()
	s, err := rancher.Start(t.Context(), rancher.Options{
		Users: []rancher.User{{Username: "alice"}}, Injector: inj,
		ConditionDelay: 50 * time.Millisecond, RemoveDelay: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c, err := rancherapi.New(rancherapi.Options{URL: s.URL, Token: s.Token, CAPEM: s.CAPEM, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestCreateCluster_LostAnswerAdoptsTheCluster: the create's answer is
// lost after Rancher made the cluster; the client adopts it and makes no
// second one.
func TestCreateCluster_LostAnswerAdoptsTheCluster(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{
		{Service: rancher.Service, Method: http.MethodPost, PathPrefix: "/v3/clusters", Nth: 1, Status: http.StatusBadGateway, After: true},
	}})
	s, c := labRancher(t, inj)
	cl, err := c.CreateCluster(t.Context(), "demo", "test-identity")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Clusters(); len(got) != 1 || got[0].ID != cl.ID {
		t.Errorf("clusters %v, want the one adopted (%s)", got, cl.ID)
	}
}

// TestBind_LostAnswerMakesNoDuplicate: Rancher 2.8–2.14 keep identical
// bindings side by side, so a binding whose answer was lost is looked for
// before it is asked again.
func TestBind_LostAnswerMakesNoDuplicate(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	s, c := labRancher(t, inj)
	cl, err := c.CreateCluster(t.Context(), "demo", "test-identity")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitBacking(t.Context(), cl.ID, 5*time.Second, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{
		{Service: rancher.Service, Method: http.MethodPost, PathPrefix: "/v3/clusterroletemplatebindings", Nth: 1, Reset: true, After: true},
	}})
	alice := s.Users()[0].PrincipalID
	if err := c.Bind(t.Context(), cl.ID, alice, "cluster-owner"); err != nil {
		t.Fatal(err)
	}
	if n := bindingsOf(s, cl.ID, alice); n != 1 {
		t.Errorf("%d bindings of alice after a lost answer, want 1", n)
	}
}

// bindingsOf counts the lab's bindings of principal on cluster id.
func bindingsOf(s *rancher.Server, id, principal string) int {
	n := 0
	for _, b := range s.Bindings() {
		if b.ClusterID == id && b.UserPrincipalID == principal {
			n++
		}
	}
	return n
}

// TestFindCluster_ExactLiveName: a cluster being removed does not count,
// a name that differs in case is another cluster, and two live clusters
// of one name are refused.
func TestFindCluster_ExactLiveName(t *testing.T) {
	t.Parallel()
	s, c := labRancher(t, nil)
	old, err := c.CreateCluster(t.Context(), "demo", "test-identity")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteCluster(t.Context(), old.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FindCluster(t.Context(), "demo"); err != nil || got != nil {
		t.Errorf("FindCluster of a removing cluster = %v, %v", got, err)
	}
	if _, err := c.CreateCluster(t.Context(), "Demo", "test-identity"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.FindCluster(t.Context(), "demo"); err != nil || got != nil {
		t.Errorf("FindCluster(demo) with only Demo = %v, %v", got, err)
	}
	two := map[string]any{"type": "collection", "data": []any{
		map[string]any{"id": "c-aaaaa", "name": "twin"}, map[string]any{"id": "c-bbbbb", "name": "twin"},
	}}
	s.ScriptError(http.MethodGet, "/v3/clusters", http.StatusOK, two)
	if _, err := c.FindCluster(t.Context(), "twin"); err == nil || !strings.Contains(err.Error(), "2 clusters are named \"twin\" (c-aaaaa, c-bbbbb)") {
		t.Errorf("two clusters of one name: %v", err)
	}
}

// TestUntrustedCertificateRefused: without rancher.ca_file the lab's
// self-signed certificate is refused before the token is sent, and the
// error says how to trust it.
func TestUntrustedCertificateRefused(t *testing.T) {
	t.Parallel()
	s, _ := labRancher(t, nil)
	c, err := rancherapi.New(rancherapi.Options{URL: s.URL, Token: s.Token, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FindCluster(t.Context(), "demo")
	if err == nil || !strings.Contains(err.Error(), "not trusted, so the token was not sent") || !strings.Contains(err.Error(), "rancher.ca_file") {
		t.Errorf("untrusted certificate: %v", err)
	}
	if n := len(s.Recorder().Calls()); n != 0 {
		t.Errorf("%d requests reached Rancher", n)
	}
}
