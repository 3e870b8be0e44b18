package openstack_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// catalogOfPlainEndpoints is an https Keystone whose catalog lists every
// service at a plain-http endpoint, and that endpoint's log of the
// requests it received (method, path and the token they carried).
func catalogOfPlainEndpoints(t *testing.T, allowHTTP bool) (*config.Cluster, *http.Client, chan string) {
	t.Helper()
	seen := make(chan string, 16)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.URL.Path + " X-Auth-Token=" + r.Header.Get("X-Auth-Token")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"versions":[]}`))
	}))
	t.Cleanup(plain.Close)
	srv := labnettest.UntrustedTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/auth/tokens") {
			http.NotFound(w, r)
			return
		}
		ep := func(typ string) string {
			return `{"type":"` + typ + `","name":"` + typ + `","endpoints":[{"interface":"public","region":"RegionOne","region_id":"RegionOne","url":"` + plain.URL + `/"}]}`
		}
		w.Header().Set("X-Subject-Token", "tok")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":{"expires_at":"2099-01-01T00:00:00Z","project":{"id":"p","name":"demo"},"catalog":[` +
			ep("compute") + "," + ep("network") + "," + ep("image") + "," + ep("volumev3") + `]}}`))
	}))
	cfg := &config.Cluster{OpenStack: &config.OpenStack{
		URL: srv.URL + "/v3/", Region: "RegionOne", CredentialID: "id", CredentialSecret: "app-secret", AllowHTTP: allowHTTP,
	}}
	return cfg, srv.Client(), seen
}

// An https Keystone whose catalog lists plain-http endpoints is refused as
// an http:// openstack.url is, before the token is sent to any of them
// (I-C1: gophercloud's version discovery sent it at once).
func TestConnect_RefusesAPlainHTTPCatalogEndpointBeforeSendingItAnything(t *testing.T) {
	cfg, client, seen := catalogOfPlainEndpoints(t, false)
	_, err := openstack.Connect(t.Context(), cfg, openstack.Options{Retries: -1, HTTPClient: client})
	close(seen)
	for req := range seen {
		t.Errorf("the plain-http endpoint received %s", req)
	}
	want := []string{
		"the compute (nova) endpoint in the catalog at " + cfg.OpenStack.URL, "/\" is plain http: every token Keystone issues would cross the network unencrypted",
		"use https:// endpoints in the service catalog, or set openstack.allow_http: true",
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("err = %v, want the refusal (%q)", err, w)
		}
	}
}

// With openstack.allow_http the user accepts plain http: the catalog's
// endpoints are used (and the refusal above is not a lab artefact).
func TestConnect_AllowHTTPAcceptsAPlainHTTPCatalogEndpoint(t *testing.T) {
	cfg, client, seen := catalogOfPlainEndpoints(t, true)
	_, err := openstack.Connect(t.Context(), cfg, openstack.Options{Retries: -1, HTTPClient: client})
	close(seen)
	if len(seen) == 0 {
		t.Errorf("Connect (err %v) sent nothing to the plain-http endpoint with allow_http set", err)
	}
	if err != nil && strings.Contains(err.Error(), "is plain http") {
		t.Errorf("err = %v, want no refusal with allow_http set", err)
	}
}
