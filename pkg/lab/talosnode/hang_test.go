package talosnode_test

import (
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// settle gives the simulation time it would need to act (several boot,
// reset and reboot timings of fastTiming), so a test can see it did not.
func settle() { time.Sleep(250 * time.Millisecond) }

// TestResetHangs: a reset the API accepted stays hung while the knob is
// set, the node up and answering, still an etcd member; another reset
// starts nothing, a reboot ends the hung one (unwiped); once the knob is
// cleared a hung reset goes on to wipe and halt the node.
func TestResetHangs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	n := l.nodes[cp(3)]
	n.SetKnobs(talosnode.Knobs{ResetHangs: true})
	c3, c1 := l.client(cp(3)), l.client(cp(1))
	reset := func() {
		t.Helper()
		if err := c3.ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true}); err != nil {
			t.Fatal(err)
		}
	}
	hung := func(when string) {
		t.Helper()
		settle()
		st := n.Status()
		if !st.APIUp || st.Stage != "resetting" || st.Maintenance || st.EtcdMember == 0 {
			t.Fatalf("%s: a hung reset must leave the node up, resetting, configured, an etcd member: %+v", when, st)
		}
		if _, err := c3.Version(ctx(t, 2*time.Second)); err != nil {
			t.Fatalf("%s: a node in a hung reset answers: %v", when, err)
		}
		if ids, err := members(t, c1); err != nil || ids[cp(3)] == 0 {
			t.Fatalf("%s: etcd members %v %v, want cp-03 still in", when, ids, err)
		}
	}
	reset()
	hung("reset")
	reset()
	hung("second reset")

	boots := n.Status().Boots
	if err := c3.Reboot(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	l.waitReboot(cp(3), boots)
	if st := n.Status(); st.Stage != "running" || st.Maintenance || st.Cluster == "" {
		t.Fatalf("a reboot over a hung reset: %+v, want running with its configuration", st)
	}

	reset()
	hung("reset after the reboot")
	n.SetKnobs(talosnode.Knobs{})
	eventually(t, "the reset goes on once the knob is cleared", func() bool { st := n.Status(); return !st.Powered && !st.APIUp })
	if ids, err := members(t, c1); err != nil || len(ids) != 2 || ids[cp(3)] != 0 {
		t.Fatalf("etcd members after the reset finished: %v %v", ids, err)
	}
}

// TestRebootHangs: a reboot Talos runs (a Reboot call, a Talos 1.13 apply
// that reboots) never comes back while the knob is set, and comes back once
// it is cleared; a provider restart boots the node whatever the knob.
func TestRebootHangs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos113)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1), worker) // a worker's apid needs a control plane's trustd
	n := l.nodes[worker]
	n.SetKnobs(talosnode.Knobs{RebootHangs: true})
	down := func(what string) {
		t.Helper()
		eventually(t, what+": down", func() bool { return !n.Status().APIUp })
		settle()
		if st := n.Status(); st.APIUp || !st.Powered || st.Stage != "rebooting" {
			t.Fatalf("%s with rebootHangs: %+v, want powered, apid down, rebooting", what, st)
		}
	}

	boots := n.Status().Boots
	if err := l.client(worker).Reboot(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	down("Reboot")
	n.SetKnobs(talosnode.Knobs{})
	l.waitReboot(worker, boots)

	n.SetKnobs(talosnode.Knobs{RebootHangs: true})
	boots = n.Status().Boots
	got, err := apply(t, l.client(worker), patched(t, fx.configs[worker], envPatch), machine.ApplyConfigurationRequest_AUTO, false)
	if err != nil || got.GetMode() != machine.ApplyConfigurationRequest_REBOOT { //nolint:staticcheck // Talos 1.13's answer
		t.Fatalf("AUTO env change on 1.13: %v %v, want REBOOT", got, err)
	}
	down("an apply that reboots")
	n.Restart()
	l.waitReboot(worker, boots)
	if st := n.Status(); st.Knobs != (talosnode.Knobs{RebootHangs: true}) {
		t.Fatalf("knobs after a provider restart: %+v", st.Knobs)
	}
}
