package proxmox_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

// An https Proxmox that redirects to plain http on the same host
// (I-C1): Connect refuses the redirect, naming it, and the plain server
// never sees a request, let alone the API token.
func TestAuditProxmoxRedirectToHTTPIsRefused(t *testing.T) {
	t.Parallel()
	got := make(chan string, 4)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"version":"9.0","release":"9.0","repoid":"x"}}`))
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer tlsSrv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Cluster{Dir: dir, Proxmox: &config.Proxmox{URL: tlsSrv.URL, TLSVerify: config.TLSVerify{CABundle: "ca.pem"}, TokenID: "u@pve!t", TokenSecret: "tok-SECRET"}}
	_, err := proxmox.Connect(t.Context(), cfg, proxmox.Options{RequestTimeout: 5 * time.Second})
	if want := "refusing to follow a redirect to " + plain.URL + "/api2/json/version"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Connect: %v, want an error saying %q", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "tok-SECRET") {
		t.Errorf("the error shows the token: %v", err)
	}
	select {
	case h := <-got:
		t.Errorf("the plain-http server received a request (Authorization %q); want none", h)
	default:
	}
}
