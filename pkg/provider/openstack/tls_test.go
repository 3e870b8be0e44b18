package openstack_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// keystoneTLS is a TLS Keystone whose certificate comes from httptest's own
// CA, which no trust store holds. It issues a token with an empty catalog,
// so a session that authenticates then fails for want of a compute
// service. It counts the requests that reached it.
func keystoneTLS(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var reached atomic.Int32
	srv := labnettest.UntrustedTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/auth/tokens") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Subject-Token", "tok")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":{"expires_at":"2099-01-01T00:00:00Z","project":{"id":"p","name":"demo"},"catalog":[]}}`))
	}))
	return srv, &reached
}

// TestConnect_RefusesAnUntrustedCertificate: with the default transport
// (the system trust store), a Keystone whose certificate no trusted CA
// signed is refused during the handshake, before the application
// credential is sent; the same server through a transport that trusts its
// CA authenticates, so the refusal is the certificate's doing.
func TestConnect_RefusesAnUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv, reached := keystoneTLS(t)
	cfg := &config.Cluster{OpenStack: &config.OpenStack{
		URL: srv.URL + "/v3/", Region: "RegionOne", CredentialID: "id", CredentialSecret: "app-secret",
	}}
	_, err := openstack.Connect(t.Context(), cfg, openstack.Options{Retries: -1})
	if err == nil {
		t.Fatal("Connect accepted a certificate no trusted CA signed")
	}
	for _, want := range []string{
		"openstack: authenticate at " + srv.URL, "certificate is not trusted, so the application credential was not sent",
		"x509: certificate signed by unknown authority", "openstack.url must present a certificate from a CA this machine trusts",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "app-secret") {
		t.Errorf("error shows the credential: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d request(s) reached the untrusted server; want none (the credential must not be sent)", n)
	}

	_, err = openstack.Connect(t.Context(), cfg, openstack.Options{Retries: -1, HTTPClient: srv.Client()})
	if err == nil || !strings.Contains(err.Error(), "no compute (nova) service") {
		t.Fatalf("through a transport trusting the server's CA: %v, want an authenticated session with no compute service", err)
	}
	if reached.Load() == 0 {
		t.Error("the trusted server saw no request")
	}
}
