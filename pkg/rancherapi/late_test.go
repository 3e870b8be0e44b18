package rancherapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/rancher"
	"github.com/talosc/talosc/pkg/rancherapi"
)

// lateDelay is how long after its 504 a late request reaches Rancher.
const lateDelay = 1500 * time.Millisecond

// lateRancher fronts the lab Rancher s on loopback with a middleware that
// answers the first request of method and path 504 at once and sends it
// to Rancher in the background lateDelay later, as a busy Rancher applies
// a request its client gave up on. It returns a client of the front and
// the number of such requests Rancher was sent.
func lateRancher(t *testing.T, s *rancher.Server, method, path string) (*rancherapi.Client, *atomic.Int32) {
	t.Helper()
	var seen, sent atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		match := r.Method == method && r.URL.Path == path
		if match {
			sent.Add(1)
		}
		if match && seen.Add(1) == 1 {
			w.WriteHeader(http.StatusGatewayTimeout)
			go func() {
				time.Sleep(lateDelay)
				if resp, err := forward(context.Background(), s, r, body); err == nil {
					_ = resp.Body.Close()
				}
			}()
			return
		}
		resp, err := forward(r.Context(), s, r, body)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	c, err := rancherapi.New(rancherapi.Options{URL: front.URL, Token: s.Token, Timeout: 5 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return c, &sent
}

// forward sends r, with body, to the lab Rancher s.
func forward(ctx context.Context, s *rancher.Server, r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, s.URL+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	return s.Client().Do(req)
}

// TestCreateCluster_LateCreateIsAwaitedNotRepeated: a cluster create
// answered 504 at once and applied 1.5 s later is looked for (by name and
// talosc's marker) until it appears, and adopted: Rancher is asked for it
// once, and holds one cluster.
func TestCreateCluster_LateCreateIsAwaitedNotRepeated(t *testing.T) {
	t.Parallel()
	s, _ := labRancher(t, nil)
	c, sent := lateRancher(t, s, http.MethodPost, "/v3/clusters")
	cl, err := c.CreateCluster(t.Context(), "demo", "id-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Clusters(); len(got) != 1 || got[0].ID != cl.ID {
		t.Errorf("clusters %v, want the late one adopted (%s)", got, cl.ID)
	}
	if n := sent.Load(); n != 1 {
		t.Errorf("%d creates sent to Rancher, want 1", n)
	}
}

// TestBind_LateBindIsAwaitedNotRepeated: a binding create answered 504 at
// once and applied 1.5 s later is looked for until it appears: Rancher
// (which keeps identical bindings side by side) holds one.
func TestBind_LateBindIsAwaitedNotRepeated(t *testing.T) {
	t.Parallel()
	s, direct := labRancher(t, nil)
	cl, err := direct.CreateCluster(t.Context(), "demo", "id-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.WaitBacking(t.Context(), cl.ID, 5*time.Second, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c, sent := lateRancher(t, s, http.MethodPost, "/v3/clusterroletemplatebindings")
	alice := s.Users()[0].PrincipalID
	if err := c.Bind(t.Context(), cl.ID, alice, "cluster-owner"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lateDelay) // a second bind, had there been one, lands by now
	if n := bindingsOf(s, cl.ID, alice); n != 1 || sent.Load() != 1 {
		t.Errorf("%d bindings of alice, %d creates sent, want 1 and 1", bindingsOf(s, cl.ID, alice), sent.Load())
	}
}
