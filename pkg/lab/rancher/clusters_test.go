package rancher_test

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
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
		want := map[string]any{"type": "error", "status": "401", "message": "Unauthorized 401: must authenticate"}
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

// TestImportLifecycle follows an import as Rancher 2.11 answers it: the
// cluster starts pending with driver "" and its conditions Unknown; tokens
// are refused until its namespace exists; Rancher makes default-token;
// a token's command is filled later, by a controller; ?filter= is ignored
// and ?name= matches exactly; a deleted cluster stays "removing" for a
// while, its name free at once.
func TestImportLifecycle(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{ConditionDelay: 50 * time.Millisecond, CommandDelay: 50 * time.Millisecond, RemoveDelay: 500 * time.Millisecond})
	code, c := api(t, s, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "lab1"})
	if code != http.StatusCreated || c["type"] != "cluster" || c["state"] != "pending" || c["driver"] != "" {
		t.Fatalf("create: %d %v", code, c)
	}
	id, _ := c["id"].(string)
	links, _ := c["links"].(map[string]any)
	if !regexp.MustCompile(`^c-[a-z0-9]{5}$`).MatchString(id) || links["clusterregistrationtokens"] != s.URL+"/v3/clusters/"+id+"/clusterregistrationtokens" {
		t.Errorf("id %q links %v", id, links)
	}
	if c["annotations"].(map[string]any)["field.cattle.io/creatorId"] == "" || c["labels"].(map[string]any)["cattle.io/creator"] != "norman" {
		t.Errorf("creator marks: %v %v", c["annotations"], c["labels"])
	}
	for _, typ := range []string{"BackingNamespaceCreated", "CreatorMadeOwner", "Provisioned"} {
		if got := condition(c, typ); got != "Unknown" {
			t.Errorf("%s right after import = %q", typ, got)
		}
	}
	if code, e := api(t, s, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"type": "clusterRegistrationToken", "clusterId": id}); code != http.StatusNotFound || e["message"] != `namespaces "`+id+`" not found` {
		t.Errorf("token before the namespace: %d %v", code, e)
	}
	importCluster(t, s, "lab2")
	// norman ignores ?filter=: every cluster, local included.
	_, coll := api(t, s, http.MethodGet, "/v3/clusters?filter=name=lab1", nil)
	if rows := data(t, coll); len(rows) != 3 || !slices.ContainsFunc(rows, func(r map[string]any) bool { return r["id"] == "local" }) {
		t.Errorf("?filter=name=lab1: %v", rows)
	}
	for q, n := range map[string]int{"?name=lab1": 1, "?name=LAB1": 0, "?name=lab": 0} {
		if _, coll := api(t, s, http.MethodGet, "/v3/clusters"+q, nil); len(data(t, coll)) != n {
			t.Errorf("%s: want %d rows", q, n)
		}
	}
	code, tok := api(t, s, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"type": "clusterRegistrationToken", "clusterId": id})
	if code != http.StatusCreated || tok["clusterId"] != id || tok["namespaceId"] != nil || tok["command"] != "" || len(tok["token"].(string)) != 54 {
		t.Fatalf("token: %d %v", code, tok)
	}
	rows := tokens(t, s, id)
	if got := ids(rows); !slices.Equal(got, []string{tok["id"].(string), id + ":default-token"}) {
		t.Errorf("tokens by id: %v", got)
	}
	time.Sleep(60 * time.Millisecond) // the controller fills the commands
	rows = tokens(t, s, id)
	mine := rows[slices.IndexFunc(rows, func(r map[string]any) bool { return r["id"] == tok["id"] })]
	url := s.URL + "/v3/import/" + tok["token"].(string) + "_" + id + ".yaml"
	if mine["manifestUrl"] != url || mine["command"] != "kubectl apply -f "+url || !strings.Contains(mine["nodeCommand"].(string), "/var/run  rancher/rancher-agent:") {
		t.Errorf("filled token: %v", mine)
	}
	fetchManifest(t, s, url)
	if code, body := fetch(t, s, s.URL+"/v3/import/nope_"+id+".yaml"); code != http.StatusBadRequest || body != "cluster not found or invalid token" {
		t.Errorf("unknown token manifest: %d %q", code, body)
	}
	// Delete: removing for a while, the name free at once.
	if code, c = api(t, s, http.MethodDelete, "/v3/clusters/"+id, nil); code != http.StatusOK || c["state"] != "removing" || c["removed"] == nil {
		t.Errorf("delete: %d %v", code, c)
	}
	if code, c = api(t, s, http.MethodGet, "/v3/clusters/"+id, nil); code != http.StatusOK || c["state"] != "removing" {
		t.Errorf("right after delete: %d %v", code, c)
	}
	again := importCluster(t, s, "lab1")
	for code, e := api(t, s, http.MethodGet, "/v3/clusters/"+id, nil); code != http.StatusNotFound; code, e = api(t, s, http.MethodGet, "/v3/clusters/"+id, nil) {
		if code != http.StatusOK || e["state"] != "removing" {
			t.Fatalf("while removing: %d %v", code, e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range s.Bindings() {
		if b.ClusterID == id {
			t.Errorf("binding %v survived its cluster", b)
		}
	}
	if slices.ContainsFunc(s.Tokens(), func(x rancher.Token) bool { return x.ClusterID == id }) {
		t.Error("tokens survived their cluster")
	}
	if code, _ := fetch(t, s, url); code != http.StatusBadRequest {
		t.Errorf("manifest of a deleted cluster: %d", code)
	}
	if got := s.Clusters(); len(got) != 2 || got[0].ID == id || got[1].ID == id || !slices.ContainsFunc(got, func(x rancher.Cluster) bool { return x.ID == again }) {
		t.Errorf("Clusters() = %v", got)
	}
}

func tokens(t *testing.T, s *rancher.Server, id string) []map[string]any {
	t.Helper()
	_, coll := api(t, s, http.MethodGet, "/v3/clusters/"+id+"/clusterregistrationtokens", nil)
	return data(t, coll)
}

func ids(rows []map[string]any) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r["id"].(string))
	}
	return out
}

// fetch GETs url without credentials.
func fetch(t *testing.T, s *rancher.Server, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain" {
		t.Errorf("%s: Content-Type %q, want text/plain", url, ct)
	}
	return resp.StatusCode, string(raw)
}

// fetchManifest checks the import manifest's documents: Rancher's, in
// Rancher's order, and no cluster id anywhere (the credentials'
// namespace is "").
func fetchManifest(t *testing.T, s *rancher.Server, url string) {
	t.Helper()
	code, raw := fetch(t, s, url)
	if code != http.StatusOK {
		t.Fatalf("manifest: %d %s", code, raw)
	}
	var kinds []string
	dec := yaml.NewDecoder(strings.NewReader(raw))
	for {
		var doc struct {
			Kind     string                `yaml:"kind"`
			Metadata struct{ Name string } `yaml:"metadata"`
			Data     map[string]string     `yaml:"data"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("manifest is not YAML: %v\n%s", err, raw)
		}
		kinds = append(kinds, doc.Kind+"/"+doc.Metadata.Name)
		if doc.Kind == "Secret" && doc.Data["namespace"] != "" {
			t.Errorf("the import manifest's credentials carry a namespace: %v", doc.Data)
		}
	}
	want := []string{
		"ClusterRole/proxy-clusterrole-kubeapiserver", "ClusterRoleBinding/proxy-role-binding-kubernetes-master",
		"Namespace/cattle-system", "ServiceAccount/cattle", "ClusterRoleBinding/cattle-admin-binding",
		"Secret/" + kinds[5][len("Secret/"):], "ClusterRole/cattle-admin", "Deployment/cattle-cluster-agent", "Service/cattle-cluster-agent",
	}
	if diff := cmp.Diff(want, kinds); diff != "" || !strings.HasPrefix(kinds[5], "Secret/cattle-credentials-") {
		t.Errorf("manifest documents (-want +got):\n%s", diff)
	}
}

func TestClusterErrors(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	importCluster(t, s, "dup")
	for _, tc := range []struct {
		method, path   string
		body           any
		status         int
		code, field, m string
	}{
		{http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster"}, 422, "MissingRequired", "Cluster name", ""},
		{http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "dup"}, 422, "NotUnique", "Cluster name", ""},
		{http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "DUP"}, 422, "NotUnique", "Cluster name", ""},
		{http.MethodPost, "/v3/clusters", "not an object", 422, "InvalidBodyContent", "", "*"},
		{http.MethodGet, "/v3/clusters/c-zzzzz", nil, 404, "NotFound", "", `clusters.management.cattle.io "c-zzzzz" not found`},
		{http.MethodDelete, "/v3/clusters/c-zzzzz", nil, 404, "NotFound", "", "*"},
		{http.MethodDelete, "/v3/clusters/local", nil, 404, "NotFound", "", "*"},
		{http.MethodGet, "/v3/clusters/c-zzzzz/clusterregistrationtokens", nil, 404, "NotFound", "", "*"},
		{http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"clusterId": "c-zzzzz"}, 404, "NotFound", "", `namespaces "c-zzzzz" not found`},
		{http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{}, 422, "MissingRequired", "clusterId", ""},
		{http.MethodPost, "/v3/principals?action=nope", map[string]any{}, 422, "InvalidAction", "", "Invalid action: nope"},
	} {
		code, e := api(t, s, tc.method, tc.path, tc.body)
		if code != tc.status || e["type"] != "error" || e["baseType"] != "error" || e["status"] != float64(tc.status) || e["code"] != tc.code {
			t.Errorf("%s %s: %d %v, want %d %s", tc.method, tc.path, code, e, tc.status, tc.code)
		}
		if f, _ := e["fieldName"].(string); f != tc.field {
			t.Errorf("%s %s: fieldName %q, want %q", tc.method, tc.path, f, tc.field)
		}
		if m, _ := e["message"].(string); tc.m != "*" && m != tc.m || tc.m == "*" && m == "" {
			t.Errorf("%s %s: message %q, want %q", tc.method, tc.path, m, tc.m)
		}
	}
}

// TestClusterKeepsItsCreatorsLabels: labels and annotations given at
// create are kept on the cluster, beside Rancher's own, as Rancher keeps
// them on the management cluster object.
func TestClusterKeepsItsCreatorsLabels(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	api(t, s, http.MethodPost, "/v3/clusters", map[string]any{
		"type": "cluster", "name": "lab1", "labels": map[string]string{"a": "1"}, "annotations": map[string]string{"b": "2"},
	})
	_, coll := api(t, s, http.MethodGet, "/v3/clusters?name=lab1", nil)
	rows := data(t, coll)
	want := map[string]any{
		"labels":      map[string]any{"a": "1", "cattle.io/creator": "norman"},
		"annotations": map[string]any{"b": "2", "field.cattle.io/creatorId": strings.TrimPrefix(s.AdminPrincipalID, "local://")},
	}
	if len(rows) != 1 || !cmp.Equal(want["labels"], rows[0]["labels"]) || !cmp.Equal(want["annotations"], rows[0]["annotations"]) {
		t.Errorf("cluster %v, want %v", rows, want)
	}
}
