package releases_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/releases"
)

// TestKubernetesVersions_RefusesAnUntrustedCertificate: the kubelet
// registry is read with the system trust store by default, so a registry
// whose certificate comes from httptest's own CA is refused; a client that
// trusts that CA reads it.
func TestKubernetesVersions_RefusesAnUntrustedCertificate(t *testing.T) {
	t.Parallel()
	srv := labnettest.UntrustedTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/siderolabs/kubelet/tags/list" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"tags":["v1.35.4"]}`))
	}))
	repo := srv.URL + "/siderolabs/kubelet"

	_, err := releases.KubernetesVersions(t.Context(), nil, repo)
	if err == nil {
		t.Fatal("KubernetesVersions accepted a certificate no trusted CA signed")
	}
	for _, want := range []string{"kubelet tags at " + repo, "tls: failed to verify certificate: x509: certificate signed by unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	got, err := releases.KubernetesVersions(t.Context(), srv.Client(), repo)
	if err != nil || !slices.Equal(got, []string{"v1.35.4"}) {
		t.Errorf("through a client trusting its CA: %v, %v", got, err)
	}
}
