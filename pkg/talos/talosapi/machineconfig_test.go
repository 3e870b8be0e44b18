package talosapi_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// TestMachineConfig reads the running configuration of a control plane and,
// through it, of a worker: byte for byte the generated configs they booted
// with, since both sides are machinery's comment-free encoding.
func TestMachineConfig(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{})
	c.boot(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	for _, host := range []string{cp1, worker1} {
		if err := cl.WaitReachable(t.Context(), c.addr(host), 5*time.Second, 20*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		got, err := cl.MachineConfig(t.Context(), c.addr(host))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.configs[host]) {
			t.Errorf("MachineConfig of %s is not the config it booted with:\n%s", host, got)
		}
	}
}
