package rancher_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/kubeapi/kubeapitest"
	"github.com/talosc/talosc/pkg/lab/rancher"
)

// apply creates every document of a manifest that does not exist yet.
func apply(t *testing.T, srv *kubeapi.Server, manifest string) {
	t.Helper()
	if err := rancher.ApplyDocs(t.Context(), srv.RESTConfig(), srv.Client(), manifest); err != nil {
		t.Fatal(err)
	}
}

// registered imports name and returns its id and import manifest.
func registered(t *testing.T, s *rancher.Server, name string) (string, string) {
	t.Helper()
	id := importCluster(t, s, name)
	code, tok := api(t, s, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"type": "clusterRegistrationToken", "clusterId": id})
	if code != http.StatusCreated {
		t.Fatalf("token: %d %v", code, tok)
	}
	code, manifest := fetch(t, s, s.URL+"/v3/import/"+tok["token"].(string)+"_"+id+".yaml")
	if code != http.StatusOK {
		t.Fatalf("manifest: %d %s", code, manifest)
	}
	return id, manifest
}

// TestAgentConnects: the import manifest creates real objects downstream
// and names no cluster; once the agent connects, Rancher marks the cluster
// active and imported, makes its system token, and redeploys the agent
// with a second credentials Secret whose namespace is the cluster id, the
// Deployment pointing at it; cattle-system joins the System project with
// Rancher's finalizer. A second connection changes nothing.
func TestAgentConnects(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	down := kubeapitest.Standalone(t)
	id, manifest := registered(t, s, "lab")
	apply(t, down, manifest)
	cs := down.Client()
	before, data, err := rancher.AgentCredentials(t.Context(), cs)
	if err != nil || string(data["namespace"]) != "" || string(data["url"]) != s.URL {
		t.Fatalf("agent before it connects: %s %q, %v", before, data["namespace"], err)
	}
	got, err := s.ConnectAgent(t.Context(), cs)
	if err != nil || got != id {
		t.Fatalf("ConnectAgent = %q, %v; want %s", got, err, id)
	}
	after, data, err := rancher.AgentCredentials(t.Context(), cs)
	if err != nil || after == before || string(data["namespace"]) != id {
		t.Errorf("agent after the redeploy: %s (was %s), namespace %q, %v", after, before, data["namespace"], err)
	}
	if _, err := cs.CoreV1().Secrets(rancher.AgentNamespace).Get(t.Context(), before, metav1.GetOptions{}); err != nil {
		t.Errorf("the first credentials Secret went: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(t.Context(), rancher.AgentNamespace, metav1.GetOptions{})
	if err != nil || !strings.HasPrefix(ns.Annotations[rancher.ProjectIDKey], id+":p-") || !slices.Contains(ns.Finalizers, rancher.NamespaceAuthFinalizer) {
		t.Errorf("cattle-system after the connection: %v %v, %v", ns.Annotations, ns.Finalizers, err)
	}
	_, c := api(t, s, http.MethodGet, "/v3/clusters/"+id, nil)
	if c["state"] != "active" || c["driver"] != "imported" || condition(c, "Connected") != "True" {
		t.Errorf("cluster after the connection: %v %v %v", c["state"], c["driver"], c["conditions"])
	}
	if got := ids(tokens(t, s, id)); got[len(got)-1] != id+":system" {
		t.Errorf("tokens: %v, want system last", got)
	}
	if again, err := s.ConnectAgent(t.Context(), cs); err != nil || again != id {
		t.Errorf("second connection: %q, %v", again, err)
	}
	if name, _, _ := rancher.AgentCredentials(t.Context(), cs); name != after {
		t.Errorf("a second connection redeployed again: %s", name)
	}
}

// TestAgentRefused: no agent is ErrNoAgent; an agent of another Rancher,
// or whose cluster was deleted, does not connect.
func TestAgentRefused(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{RemoveDelay: time.Hour})
	other := start(t, rancher.Options{})
	down := kubeapitest.Standalone(t)
	if _, err := s.ConnectAgent(t.Context(), down.Client()); !errors.Is(err, rancher.ErrNoAgent) {
		t.Errorf("no agent: %v", err)
	}
	_, manifest := registered(t, other, "lab")
	apply(t, down, manifest)
	if _, err := s.ConnectAgent(t.Context(), down.Client()); err == nil || !strings.Contains(err.Error(), "not this Rancher") {
		t.Errorf("another Rancher's agent: %v", err)
	}
	gone := kubeapitest.Standalone(t)
	id, manifest := registered(t, s, "lab")
	apply(t, gone, manifest)
	if code, _ := api(t, s, http.MethodDelete, "/v3/clusters/"+id, nil); code != http.StatusOK {
		t.Fatal("delete")
	}
	if _, err := s.ConnectAgent(t.Context(), gone.Client()); err == nil {
		t.Error("the agent of a deleted cluster connected")
	}
}
