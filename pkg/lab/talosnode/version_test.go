package talosnode_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/identity"
)

func TestVersionOverMTLS(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	start := time.Now()
	l.boot()
	t.Logf("4 nodes up in %v", time.Since(start))
	for _, m := range fx.hosts {
		resp, err := l.client(m.Hostname).Version(ctx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s: Version: %v", m.Hostname, err)
		}
		v := resp.GetMessages()[0]
		if got := v.GetVersion().GetTag(); got != talos114 {
			t.Errorf("%s: tag %q, want %q", m.Hostname, got, talos114)
		}
		if got := v.GetPlatform().GetName(); got != "nocloud" {
			t.Errorf("%s: platform %q, want nocloud", m.Hostname, got)
		}
		if !v.GetFeatures().GetRbac() {
			t.Errorf("%s: rbac feature off", m.Hostname)
		}
	}
}

func TestTLSRejectsForeignIdentity(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))

	other := loadIdentity(t, "foreign-talossecrets.yaml")
	tc, err := identity.Talosconfig(other, "lab", fx.addrs[cp(1)].String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(t.Context(), client.WithConfig(tc))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Version(ctx(t, 2*time.Second))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("Version with a foreign CA: %v, want Unavailable (TLS failure)", err)
	}

	// A client certificate of the right CA without os:admin may read but
	// not bootstrap.
	reader := l.clientAs(cp(1), role.Reader)
	if _, err := reader.Version(ctx(t, 2*time.Second)); err != nil {
		t.Fatalf("reader Version: %v", err)
	}
	if _, err := reader.Kubeconfig(ctx(t, 2*time.Second)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("reader Kubeconfig: %v, want PermissionDenied", err)
	}

	// Without any client certificate the handshake fails.
	bare, err := client.New(t.Context(), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), client.WithEndpoints(fx.addrs[cp(1)].String())) //nolint:gosec // the point of the test
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := bare.Version(ctx(t, 2*time.Second)); status.Code(err) != codes.Unavailable {
		t.Fatalf("Version without a client certificate: %v, want Unavailable", err)
	}
}

func TestWorkerWaitsForTrustd(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	n, err := l.fleet.Boot(fx.addrs[worker], fx.configs[worker], talosnode.Knobs{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "trustd wait", func() bool { return contains(errString(n.Status().BootError), "waiting for trustd") })
	if n.Status().APIUp {
		t.Fatal("a worker served apid without a certificate from a control plane")
	}
	l.boot(cp(1))
	if err := n.WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	l.nodes[worker] = n
	if _, err := l.client(worker).Version(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
}
