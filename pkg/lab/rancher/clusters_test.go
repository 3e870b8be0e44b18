package rancher_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/lab/rancher"
)

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	if !regexp.MustCompile(`^token-[a-z0-9]{5}:[a-z0-9]{52}$`).MatchString(s.Token) {
		t.Errorf("token %q is not token-xxxxx:yyyy shaped", s.Token)
	}
	for _, tok := range []string{"", "token-wrong:nope"} {
		code, body := call(t, s, tok, http.MethodGet, "/v3/clusters", nil)
		want := map[string]any{"type": "error", "status": "401", "message": "must authenticate"}
		if code != http.StatusUnauthorized || !cmp.Equal(want, body) {
			t.Errorf("token %q: %d %v, want 401 %v", tok, code, body, want)
		}
	}
	if code, _ := api(t, s, http.MethodGet, "/v3/clusters", nil); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}
}

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	if s, err := rancher.Start(t.Context(), rancher.Options{Addr: "0.0.0.0:0"}); err == nil {
		_ = s.Close()
		t.Fatal("Start on 0.0.0.0 succeeded")
	}
}

func TestImportLifecycle(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{ConditionDelay: 50 * time.Millisecond})
	code, c := api(t, s, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "lab1"})
	if code != http.StatusCreated || c["type"] != "cluster" || c["state"] != "pending" || c["driver"] != "imported" {
		t.Fatalf("create: %d %v", code, c)
	}
	id, _ := c["id"].(string)
	if !regexp.MustCompile(`^c-[a-z0-9]{5}$`).MatchString(id) || c["links"].(map[string]any)["self"] != s.URL+"/v3/clusters/"+id {
		t.Errorf("id %q links %v", id, c["links"])
	}
	// RA-3: the condition is not True yet, and Rancher refuses tokens.
	if got := condition(c, "BackingNamespaceCreated"); got != "Unknown" {
		t.Errorf("BackingNamespaceCreated right after import = %q", got)
	}
	if code, e := api(t, s, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"type": "clusterRegistrationToken", "clusterId": id}); code != http.StatusNotFound || e["code"] != "NotFound" {
		t.Errorf("token before the namespace: %d %v", code, e)
	}
	if id2 := importCluster(t, s, "lab2"); id2 == id {
		t.Fatal("two clusters share an id")
	}
	if _, c = api(t, s, http.MethodGet, "/v3/clusters/"+id, nil); condition(c, "BackingNamespaceCreated") != "True" {
		t.Fatalf("after the delay: %v", c["conditions"])
	}
	// Lookup by name, both query styles.
	for _, q := range []string{"?filter=name=lab1", "?name=lab1"} {
		_, coll := api(t, s, http.MethodGet, "/v3/clusters"+q, nil)
		if rows := data(t, coll); len(rows) != 1 || rows[0]["id"] != id {
			t.Errorf("%s: %v", q, rows)
		}
	}
	if _, coll := api(t, s, http.MethodGet, "/v3/clusters?filter=name=nope", nil); len(data(t, coll)) != 0 {
		t.Error("unknown name matched")
	}
	if _, coll := api(t, s, http.MethodGet, "/v3/clusters", nil); len(data(t, coll)) != 2 {
		t.Error("unfiltered list")
	}
	// Registration token → command → manifest.
	code, tok := api(t, s, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"type": "clusterRegistrationToken", "clusterId": id})
	if code != http.StatusCreated || tok["type"] != "clusterRegistrationToken" || tok["clusterId"] != id {
		t.Fatalf("token: %d %v", code, tok)
	}
	_, coll := api(t, s, http.MethodGet, "/v3/clusters/"+id+"/clusterRegistrationTokens", nil)
	rows := data(t, coll)
	if len(rows) != 1 {
		t.Fatalf("tokens: %v", rows)
	}
	cmd, _ := rows[len(rows)-1]["command"].(string)
	url := regexp.MustCompile(`https://\S+\.yaml`).FindString(cmd)
	if want := s.URL + "/v3/import/" + tok["token"].(string) + "_" + id + ".yaml"; url != want {
		t.Fatalf("command %q: url %q, want %q", cmd, url, want)
	}
	if got := s.Tokens(); len(got) != 1 || got[0].ManifestURL != url {
		t.Errorf("Tokens() = %v", got)
	}
	checkManifest(t, s, url, id)
	// Delete.
	if code, c = api(t, s, http.MethodDelete, "/v3/clusters/"+id, nil); code != http.StatusOK || c["state"] != "removing" {
		t.Errorf("delete: %d %v", code, c)
	}
	if code, e := api(t, s, http.MethodGet, "/v3/clusters/"+id, nil); code != http.StatusNotFound || e["code"] != "NotFound" || e["type"] != "error" {
		t.Errorf("get after delete: %d %v", code, e)
	}
	if code, _ := api(t, s, http.MethodDelete, "/v3/clusters/"+id, nil); code != http.StatusNotFound {
		t.Errorf("second delete: %d", code)
	}
	for _, b := range s.Bindings() {
		if b.ClusterID == id {
			t.Errorf("binding %v survived its cluster", b)
		}
	}
	if len(s.Tokens()) != 0 {
		t.Error("tokens survived their cluster")
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("manifest of a deleted cluster: %d", resp.StatusCode)
	}
}

// checkManifest fetches the import manifest without credentials, as
// kubectl apply -f <url> does, and reads the cluster id back.
func checkManifest(t *testing.T, s *rancher.Server, url, id string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("manifest: %d %s", resp.StatusCode, raw)
	}
	var kinds []string
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name        string            `yaml:"name"`
				Namespace   string            `yaml:"namespace"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Env []struct{ Name, Value string } `yaml:"env"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("manifest is not YAML: %v\n%s", err, raw)
		}
		kinds = append(kinds, doc.Kind+"/"+doc.Metadata.Name)
		if doc.Kind != "Deployment" {
			continue
		}
		if doc.Metadata.Namespace != "cattle-system" || doc.Metadata.Annotations[rancher.ClusterIDAnnotation] != id {
			t.Errorf("agent metadata %+v", doc.Metadata)
		}
		env := map[string]string{}
		for _, e := range doc.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env[rancher.AgentClusterIDEnv] != id || env["CATTLE_SERVER"] != s.URL {
			t.Errorf("agent env %v", env)
		}
	}
	if !strings.HasPrefix(strings.Join(kinds, ","), "Namespace/cattle-system,") || !strings.HasSuffix(strings.Join(kinds, ","), "Deployment/cattle-cluster-agent") {
		t.Errorf("manifest documents %v", kinds)
	}
	bad, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/v3/import/nope_"+id+".yaml", nil)
	resp2, err := s.Client().Do(bad)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token manifest: %d", resp2.StatusCode)
	}
}

func TestClusterErrors(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	importCluster(t, s, "dup")
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster"}, 422, "MissingRequired"},
		{http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "dup"}, 422, "NotUnique"},
		{http.MethodPost, "/v3/clusters", "not an object", 422, "InvalidBodyContent"},
		{http.MethodGet, "/v3/clusters/c-zzzzz", nil, 404, "NotFound"},
		{http.MethodDelete, "/v3/clusters/c-zzzzz", nil, 404, "NotFound"},
		{http.MethodGet, "/v3/clusters/c-zzzzz/clusterRegistrationTokens", nil, 404, "NotFound"},
		{http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"clusterId": "c-zzzzz"}, 422, "InvalidReference"},
		{http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{}, 422, "MissingRequired"},
		{http.MethodGet, "/v3/nodes", nil, 404, "NotFound"},
	} {
		code, e := api(t, s, tc.method, tc.path, tc.body)
		if code != tc.status || e["type"] != "error" || e["baseType"] != "error" || e["status"] != float64(tc.status) || e["code"] != tc.code {
			t.Errorf("%s %s: %d %v, want %d %s", tc.method, tc.path, code, e, tc.status, tc.code)
		}
		if m, ok := e["message"].(string); !ok || m == "" {
			t.Errorf("%s %s: message %v", tc.method, tc.path, e["message"])
		}
	}
}

func TestIgnoreFilterParam(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{IgnoreFilterParam: true})
	importCluster(t, s, "a")
	importCluster(t, s, "b")
	if _, coll := api(t, s, http.MethodGet, "/v3/clusters?filter=name=a", nil); len(data(t, coll)) != 2 {
		t.Error("?filter= was honoured")
	}
	if _, coll := api(t, s, http.MethodGet, "/v3/clusters?name=a", nil); len(data(t, coll)) != 1 {
		t.Error("?name= was not honoured")
	}
}

func TestMarkConnected(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	id := importCluster(t, s, "lab")
	if !s.MarkConnected(id) || s.MarkConnected("c-none0") {
		t.Fatal("MarkConnected")
	}
	_, c := api(t, s, http.MethodGet, "/v3/clusters/"+id, nil)
	if c["state"] != "active" || condition(c, "Ready") != "True" {
		t.Errorf("connected cluster: %v %v", c["state"], c["conditions"])
	}
	want := []rancher.Cluster{{ID: id, Name: "lab", State: "active", BackingNamespaceCreated: "True"}}
	if diff := cmp.Diff(want, s.Clusters()); diff != "" {
		t.Errorf("Clusters() (-want +got):\n%s", diff)
	}
}
