package kubeapi

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// moreVIP is the second address checkMoreAddresses serves the API on.
const moreVIP = "127.40.0.2"

// checkMoreAddresses: SetServingOn opens the API on another address (a
// moved VIP) with a serving certificate the cluster CA vouches for there,
// closes it again (refused) and leaves the primary address serving
// throughout.
func checkMoreAddresses(t *testing.T, srv *Server, ca, certPEM, keyPEM []byte) {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Address())
	url := "https://" + net.JoinHostPort(moreVIP, port)
	other := kubernetes.NewForConfigOrDie(certKubeconfig(t, url, ca, certPEM, keyPEM))
	primary := kubernetes.NewForConfigOrDie(certKubeconfig(t, srv.URL(), ca, certPEM, keyPEM))
	addr := netip.MustParseAddr(moreVIP)

	if _, err := other.Discovery().ServerVersion(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the API on %s before SetServingOn: %v, want connection refused", url, err)
	}
	if err := srv.SetServingOn(addr, true); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetServingOn(addr, true); err != nil {
		t.Fatalf("SetServingOn twice: %v", err)
	}
	// The client verifies the serving certificate against the cluster CA
	// for the address it dialled.
	if _, err := other.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the API on %s: %v", url, err)
	}
	if err := srv.SetServingOn(addr, false); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Discovery().ServerVersion(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the API on %s after SetServingOn(false): %v, want connection refused", url, err)
	}
	if _, err := primary.Discovery().ServerVersion(); err != nil {
		t.Errorf("the API on its primary address %s: %v", srv.URL(), err)
	}
}
