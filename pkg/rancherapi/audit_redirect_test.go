package rancherapi

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAuditRedirectToHTTPResendsToken (I-C1): an https Rancher that
// redirects to plain http on the same host is refused, naming both ends,
// and the plain server never sees a request, let alone the token.
func TestAuditRedirectToHTTPResendsToken(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[]}`))
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer tlsSrv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	c, err := New(Options{URL: tlsSrv.URL, Token: "token-abc:SECRET", CAPEM: ca})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FindCluster(t.Context(), "demo")
	if err == nil || !strings.Contains(err.Error(), "redirects to http://"+plain.Listener.Addr().String()+"; refusing to follow it") {
		t.Errorf("FindCluster: %v, want the redirect refused", err)
	}
	select {
	case h := <-got:
		t.Errorf("the plain-http server got a request (Authorization %q) after an https->http redirect", h)
	default:
	}
}

// TestRedirectWithinTheServerIsFollowed: a redirect to the same scheme and
// host is followed, the token with it.
func TestRedirectWithinTheServerIsFollowed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v3/clusters" {
			http.Redirect(w, r, "/v3/clusters/", http.StatusFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer token-abc:SECRET" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[{"id":"c-1","name":"demo"}]}`))
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := New(Options{URL: srv.URL, Token: "token-abc:SECRET", CAPEM: ca})
	if err != nil {
		t.Fatal(err)
	}
	if cl, err := c.FindCluster(t.Context(), "demo"); err != nil || cl == nil || cl.ID != "c-1" {
		t.Errorf("FindCluster: %v %v, want c-1 through the redirect", cl, err)
	}
}
