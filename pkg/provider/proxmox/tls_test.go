package proxmox_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

// TestConnect_TLSVerify: proxmox.tls_verify decides how the API certificate
// is checked, against a TLS server whose certificate comes from httptest's
// own CA (in no trust store). The default (true) and a CA bundle of another
// CA refuse it before the API token is sent; the bundle holding its CA, and
// false (warned about at load), connect.
func TestConnect_TLSVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Every httptest TLS server presents the same certificate, from
	// httptest's own CA.
	writePEM(t, filepath.Join(dir, "pve-ca.pem"), pveTLS(t, new(atomic.Int32)).Certificate().Raw)
	writePEM(t, filepath.Join(dir, "other-ca.pem"), otherCA(t))

	cases := []struct {
		name    string
		verify  config.TLSVerify
		refused bool
	}{
		{"true (the system trust store)", config.TLSVerify{}, true},
		{"a bundle of another CA", config.TLSVerify{CABundle: "other-ca.pem"}, true},
		{"the bundle holding its CA", config.TLSVerify{CABundle: "pve-ca.pem"}, false},
		{"false", config.TLSVerify{Insecure: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var reached atomic.Int32
			srv := pveTLS(t, &reached)
			cfg := &config.Cluster{Dir: dir, Proxmox: &config.Proxmox{URL: srv.URL, TLSVerify: tc.verify, TokenID: "u@pve!t", TokenSecret: "tok-secret"}}
			// Loading the system roots takes seconds under -race on a busy machine.
			_, err := proxmox.Connect(t.Context(), cfg, proxmox.Options{RequestTimeout: 30 * time.Second})
			if !tc.refused {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Connect accepted a certificate no trusted CA signed")
			}
			for _, want := range []string{
				"proxmox: " + srv.URL + " presents a certificate that is not trusted, so the API token was not sent",
				"x509: certificate signed by unknown authority",
				"set proxmox.tls_verify to the path of the CA bundle that signed it",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "tok-secret") {
				t.Errorf("error shows the token: %v", err)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("%d request(s) reached the untrusted server; want none", n)
			}
		})
	}
}

// pveTLS is a Proxmox API answering /version to a token, over TLS from
// httptest's CA; reached counts the requests that got through.
func pveTLS(t *testing.T, reached *atomic.Int32) *httptest.Server {
	t.Helper()
	return labnettest.UntrustedTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.URL.Path != "/api2/json/version" || !strings.HasPrefix(r.Header.Get("Authorization"), "PVEAPIToken=") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"data":{"version":"9.0.3","release":"9.0","repoid":"x"}}`))
	}))
}

func writePEM(t *testing.T, path string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// otherCA is a self-signed CA certificate unrelated to the server's.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
