package factory_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestClient_RefusesAnUntrustedCertificate: the Image Factory client (the
// default transport: the system trust store) refuses a factory whose
// certificate comes from httptest's own CA, naming the request; through a
// client that trusts that CA the same factory answers.
func TestClient_RefusesAnUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv := labnettest.UntrustedTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/versions" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`["v1.13.8"]`))
	}))

	c, err := factory.New(srv.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Versions(t.Context())
	if err == nil {
		t.Fatal("Versions accepted a certificate no trusted CA signed")
	}
	want := "list talos versions: GET " + srv.URL + "/versions: tls: failed to verify certificate: x509: certificate signed by unknown authority"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	trusting, err := factory.New(srv.URL, factory.Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := trusting.Versions(t.Context()); err != nil || !slices.Equal(v, []string{"v1.13.8"}) {
		t.Errorf("through a client trusting its CA: %v, %v", v, err)
	}
}
