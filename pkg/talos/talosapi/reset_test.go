package talosapi_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// vmReset is the scale-down reset with the test's bounds.
func vmReset(budget time.Duration) talosapi.ResetOptions {
	return talosapi.ResetOptions{Graceful: true, WipeSystem: true, Budget: budget, Poll: 20 * time.Millisecond}
}

// TestResetControlPlane: the VM scale-down reset of a control plane,
// through another control plane as the endpoint: it leaves etcd, is
// wiped and shuts down, and Reset returns once it is gone.
func TestResetControlPlane(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3, 0, talosnode.Options{})
	cp3 := "lab-controlplane-03"
	for _, h := range []string{cp1, cp2, cp3} {
		c.booted(h, talosnode.Knobs{})
	}
	cl := c.dial(cp1, talosapi.Options{})
	if err := cl.Bootstrap(t.Context(), c.addr(cp1), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, cl, c.addr(cp1), 3)
	if err := cl.Reset(t.Context(), c.addr(cp3), vmReset(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := c.nodes[cp3].Status(); st.Powered || st.APIUp {
		t.Errorf("after the reset: %+v, want it shut down", st)
	}
	members, err := cl.EtcdMembers(t.Context(), c.addr(cp1))
	if err != nil || len(members) != 2 {
		t.Errorf("etcd members after the reset = %+v, %v; want 2", members, err)
	}
}

// TestResetToMaintenance: a reset with reboot ends in maintenance mode,
// where the cluster's API is gone.
func TestResetToMaintenance(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	if err := c.nodes[worker1].SetUserData(nil); err != nil {
		t.Fatal(err)
	}
	o := vmReset(5 * time.Second)
	o.Reboot, o.WipeSystem = true, false
	if err := c.dial(worker1, talosapi.Options{}).Reset(t.Context(), c.addr(worker1), o); err != nil {
		t.Fatal(err)
	}
	c.waitStatus(worker1, "maintenance", func(st talosnode.NodeStatus) bool { return st.Maintenance })
}

// TestResetNodeGone: when the reset's events never arrive (the network
// stopped delivering), the node's API going away for good settles it.
func TestResetNodeGone(t *testing.T) {
	t.Parallel()
	timing := talosnode.Timing{Boot: 20 * time.Millisecond, Services: 40 * time.Millisecond, Reset: 300 * time.Millisecond, HealthPoll: 10 * time.Millisecond}
	c := newCluster(t, 1, 1, talosnode.Options{Timing: timing})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	p := newLossyProxy(t, c.addrs[worker1], c.nodes[worker1].Endpoint())
	cl := c.dialEndpoint(p.endpoint(), talosapi.Options{})
	go func() {
		// the first check after the reset's answer: hold back the rest
		for c.calls("/machine.MachineService/Reset?", codes.OK) == 0 || c.calls(versionRPC+"?", codes.OK) == 0 {
			if t.Context().Err() != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		p.holdAnswers()
	}()
	if err := cl.Reset(t.Context(), c.addr(worker1), vmReset(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := c.nodes[worker1].Status(); st.Powered {
		t.Errorf("after the reset: %+v, want it shut down", st)
	}
}

// TestResetFails: a reset sequence that fails is reported with Talos's
// message, and the node keeps running.
func TestResetFails(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{ResetFails: "failed to unmount EPHEMERAL"})
	cl := c.dial(cp1, talosapi.Options{})
	err := cl.Reset(t.Context(), c.addr(worker1), vmReset(5*time.Second))
	want := "talos Reset on " + c.addr(worker1) + ": failed: sequence failed: error running phase 4 in reset sequence: task 1/1: failed, failed to unmount EPHEMERAL"
	if !errors.Is(err, talosapi.ErrResetFailed) || err.Error() != want {
		t.Fatalf("Reset = %v, want %q", err, want)
	}
	if st := c.nodes[worker1].Status(); !st.APIUp || st.Maintenance {
		t.Errorf("after a failed reset: %+v, want it running", st)
	}
}

// TestResetTimesOut: a reset that does not finish within the budget, the
// node still answering, times out.
func TestResetTimesOut(t *testing.T) {
	t.Parallel()
	timing := talosnode.Timing{Boot: 20 * time.Millisecond, Services: 40 * time.Millisecond, Reset: time.Minute, HealthPoll: 10 * time.Millisecond}
	c := newCluster(t, 1, 1, talosnode.Options{Timing: timing})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	start := time.Now()
	err := c.dial(cp1, talosapi.Options{}).Reset(t.Context(), c.addr(worker1), vmReset(300*time.Millisecond))
	if !errors.Is(err, talosapi.ErrResetTimedOut) || !strings.Contains(err.Error(), "timed out after 300ms: the node still answers") {
		t.Fatalf("Reset = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Reset took %s for a 300ms budget", d)
	}
}

// TestResetRefusesBlind: a node whose events cannot be watched is not
// reset: its outcome could not be told.
func TestResetRefusesBlind(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{CallTimeout: 300 * time.Millisecond, MaxReconnectDelay: 10 * time.Millisecond})
	c.nodes[cp1].PowerOff()
	err := cl.Reset(t.Context(), c.addr(cp1), vmReset(time.Second))
	if err == nil || !strings.Contains(err.Error(), "not resetting a node whose events cannot be watched") {
		t.Fatalf("Reset of a node that is down = %v", err)
	}
}

// waitStatus waits until host's status satisfies ok.
func (c *cluster) waitStatus(host, what string, ok func(talosnode.NodeStatus) bool) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(c.nodes[host].Status()) {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not %s: %+v", host, what, c.nodes[host].Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestResetCallAnswers: a refused Reset call fails at once, with the
// node's answer; an Unavailable one leaves the outcome unknown (the reset
// may have started).
func TestResetCallAnswers(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	for _, tc := range []struct {
		status int
		want   error
		text   string
	}{
		{http.StatusBadRequest, talosapi.ErrResetFailed, "talos Reset on " + node + ": failed: rpc error: code = InvalidArgument desc = injected fault: bad request"},
		{http.StatusServiceUnavailable, talosapi.ErrResetUnknown, "talos Reset on " + node + ": outcome unknown: the call's answer was lost, the reset may have started: rpc error: code = Unavailable"},
	} {
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/machine.MachineService/Reset?", Status: tc.status}}})
		err := cl.Reset(t.Context(), node, vmReset(time.Second))
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.text) {
			t.Errorf("Reset answered %d = %v, want %q", tc.status, err, tc.text)
		}
	}
	if st := c.nodes[cp1].Status(); st.Stage != "running" {
		t.Errorf("a refused reset changed the node: %+v", st)
	}
}
