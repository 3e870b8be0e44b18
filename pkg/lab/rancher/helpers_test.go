package rancher_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/rancher"
)

// start runs a lab Rancher for one test.
func start(t *testing.T, o rancher.Options) *rancher.Server {
	t.Helper()
	if o.ConditionDelay == 0 {
		o.ConditionDelay = time.Millisecond
	}
	s, err := rancher.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call does one request with the server's bearer token (token "" means
// none) and decodes the JSON answer.
func call(t *testing.T, s *rancher.Server, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d not JSON: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// api is call with the server's own token.
func api(t *testing.T, s *rancher.Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return call(t, s, s.Token, method, path, body)
}

// data returns a collection's rows.
func data(t *testing.T, coll map[string]any) []map[string]any {
	t.Helper()
	if coll["type"] != "collection" {
		t.Fatalf("not a collection: %v", coll)
	}
	rows, ok := coll["data"].([]any)
	if !ok {
		t.Fatalf("collection without data: %v", coll)
	}
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		m, ok := r.(map[string]any)
		if !ok {
			t.Fatalf("row %v", r)
		}
		out = append(out, m)
	}
	if p, ok := coll["pagination"].(map[string]any); !ok || p["total"] != float64(len(out)) {
		t.Errorf("pagination %v for %d rows", coll["pagination"], len(out))
	}
	return out
}

// condition returns the status of a cluster condition.
func condition(c map[string]any, typ string) string {
	conds, _ := c["conditions"].([]any)
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// importCluster creates a cluster and waits for BackingNamespaceCreated.
func importCluster(t *testing.T, s *rancher.Server, name string) string {
	t.Helper()
	code, c := api(t, s, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": name})
	if code != http.StatusCreated {
		t.Fatalf("create cluster: %d %v", code, c)
	}
	id, _ := c["id"].(string)
	for deadline := time.Now().Add(5 * time.Second); ; {
		_, c = api(t, s, http.MethodGet, "/v3/clusters/"+id, nil)
		if condition(c, "BackingNamespaceCreated") == "True" {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("BackingNamespaceCreated never turned True: %v", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
