package talosapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// TestDial_RefusesANodeOfAnotherCA: the Talos API is mutual TLS against the
// cluster's own CA. A node whose certificate another CA signed (here: an
// identity generated for another cluster talks to this cluster's node) is
// refused by the client with an error that says so, while the cluster's own identity
// reads the same node.
func TestDial_RefusesANodeOfAnotherCA(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{})
	if err := c.nodes[cp1].WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	node := c.addr(cp1)
	if _, err := c.dial(cp1, talosapi.Options{}).Version(t.Context(), node); err != nil {
		t.Fatalf("the cluster's own identity: %v", err)
	}

	foreign, err := identity.Generate(talosVersion)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := talosapi.Dial(t.Context(), foreign, "lab", node, talosapi.Options{
		CallTimeout: 2 * time.Second, MaxReconnectDelay: 20 * time.Millisecond, RetryInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	_, err = cl.Version(t.Context(), node)
	if err == nil {
		t.Fatal("a node whose certificate another CA signed was accepted")
	}
	// The client's own verification refuses (the node's refusal of a
	// foreign client certificate would read "remote error: tls: bad
	// certificate").
	for _, want := range []string{"talos Version on " + node, "tls: failed to verify certificate: x509: certificate signed by unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
