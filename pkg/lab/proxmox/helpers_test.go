package proxmox_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strconv"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// startLab starts a lab Proxmox for one test; unhandled requests fail it.
func startLab(t *testing.T, o proxmox.Options) *proxmox.Server {
	t.Helper()
	if o.TaskDuration == 0 {
		o.TaskDuration = 2 * time.Millisecond
	}
	srv, err := proxmox.Start(t.Context(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnUnhandled(func(method, path string) { t.Errorf("unhandled request %s %s", method, path) })
	return srv
}

// trustingClient is an HTTP client that trusts only the lab CA's PEM, as
// talosc does with proxmox.tls_verify set to a CA path.
func trustingClient(t *testing.T, srv *proxmox.Server) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CAPEM) {
		t.Fatal("CAPEM holds no certificate")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     labnet.Dialer().DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// client is go-proxmox v0.9.0, unmodified, as talosc builds it.
func client(t *testing.T, srv *proxmox.Server, tokenID, secret string) *goproxmox.Client {
	t.Helper()
	return goproxmox.NewClient(srv.APIURL, goproxmox.WithAPIToken(tokenID, secret), goproxmox.WithHTTPClient(trustingClient(t, srv)))
}

func adminClient(t *testing.T, srv *proxmox.Server) *goproxmox.Client {
	t.Helper()
	return client(t, srv, proxmox.DefaultTokenID, proxmox.DefaultTokenSecret)
}

// waiter returns a function that waits for a task (with a short poll
// interval) and fails the test unless it succeeds; it takes the pair a
// go-proxmox call returns.
func waiter(t *testing.T) func(*goproxmox.Task, error) *goproxmox.Task {
	t.Helper()
	return func(task *goproxmox.Task, err error) *goproxmox.Task {
		t.Helper()
		if err != nil {
			t.Fatalf("starting task: %v", err)
		}
		if err := task.Wait(t.Context(), 2*time.Millisecond, 10*time.Second); err != nil {
			t.Fatalf("task %s: %v", task.UPID, err)
		}
		return task
	}
}

func opt(name string, v any) goproxmox.VirtualMachineOption {
	return goproxmox.VirtualMachineOption{Name: name, Value: v}
}

func itoa(n int) string { return strconv.Itoa(n) }
