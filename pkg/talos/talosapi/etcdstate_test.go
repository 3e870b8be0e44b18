package talosapi_test

import (
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcdState reads host's etcd state through cl, failing the test on an
// error.
func etcdState(t *testing.T, c *cluster, cl *talosapi.Client, host string) talosapi.EtcdState {
	t.Helper()
	st, err := cl.EtcdState(t.Context(), c.addr(host))
	if err != nil {
		t.Fatalf("EtcdState(%s): %v", host, err)
	}
	return st
}

// waitEtcdData waits until host's etcd data directory holds something.
func waitEtcdData(t *testing.T, c *cluster, cl *talosapi.Client, host string) talosapi.EtcdState {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := etcdState(t, c, cl, host)
		if st.Data || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEtcdStateBeforeAndAfterBootstrap: before bootstrap, every control
// plane's etcd waits in Preparing with an empty data directory (no
// evidence it ever ran); after it, the bootstrapped node's etcd runs with
// data and a control plane that joined has data too; a worker has no
// etcd service and no data.
func TestEtcdStateBeforeAndAfterBootstrap(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, 1, talosnode.Options{})
	for _, h := range []string{cp1, cp2, worker1} {
		c.booted(h, talosnode.Knobs{})
	}
	cl := c.dial(cp1, talosapi.Options{})
	for _, h := range []string{cp1, cp2} {
		if st := etcdState(t, c, cl, h); st != (talosapi.EtcdState{Service: "Preparing"}) || st.Ran() {
			t.Errorf("%s before bootstrap: %+v (ran %t), want Preparing without data", h, st, st.Ran())
		}
	}
	if st := etcdState(t, c, cl, worker1); st != (talosapi.EtcdState{}) {
		t.Errorf("worker: %+v, want no etcd service and no data", st)
	}
	if err := cl.Bootstrap(t.Context(), c.addr(cp1), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := etcdState(t, c, cl, cp1); st != (talosapi.EtcdState{Service: "Running", Data: true}) || !st.Ran() {
		t.Errorf("%s after bootstrap: %+v", cp1, st)
	}
	if st := waitEtcdData(t, c, cl, cp2); !st.Data || !st.Ran() {
		t.Errorf("%s after joining: %+v, want data", cp2, st)
	}
}

// TestEtcdStateUnreadable: a node whose Talos API does not answer has no
// etcd state, only an error (unknown is never "not bootstrapped").
func TestEtcdStateUnreadable(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{NeverBoots: true})
	cl := c.dial(cp1, talosapi.Options{CallTimeout: 200 * time.Millisecond})
	if st, err := cl.EtcdState(t.Context(), c.addr(cp1)); err == nil {
		t.Fatalf("EtcdState of a node that never answers = %+v, want an error", st)
	}
}
