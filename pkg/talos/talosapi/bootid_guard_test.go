package talosapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// A reboot cannot be told without the boot id from before it: an empty
// one is refused (any id would read as the reboot).
func TestWaitRebootedRefusesNoPreviousBootID(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	err := cl.WaitRebooted(t.Context(), c.addr(cp1), "", time.Second, 10*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "no boot id to compare with, cannot tell a reboot") {
		t.Errorf("err = %v", err)
	}
}

// An apply is not sent to a node whose boot id cannot be read first: its
// reboot could not be settled, nor a lost answer told from someone
// else's apply.
func TestApplyRefusedWithoutTheBootID(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{CallTimeout: 300 * time.Millisecond, InstallTimeout: time.Second})
	_, err := cl.ApplyConfiguration(t.Context(), c.addr(worker1), c.configs[worker1], false)
	if err == nil || !strings.Contains(err.Error(), "not applying without the boot id to settle it by") {
		t.Errorf("err = %v", err)
	}
}
