package talosapi_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const applyRPC = "/machine.MachineService/ApplyConfiguration?"

// withEnv is config with an environment variable for machined: a change
// Talos 1.13 cannot apply without a reboot (machine.env is not on its
// immediate list), 1.14 applies live.
func withEnv(t *testing.T, config []byte) []byte {
	t.Helper()
	return patch(t, config, "machine:\n  env:\n    TALOSC_TEST: day2\n")
}

// runsEnv reports whether the first control plane runs the configuration
// of withEnv.
func (c *cluster) runsEnv(cl *talosapi.Client) bool {
	c.t.Helper()
	mc, err := cl.MachineConfig(c.t.Context(), c.addr(cp1))
	if err != nil {
		c.t.Fatal(err)
	}
	return bytes.Contains(mc, []byte("TALOSC_TEST: day2"))
}

// applies counts the recorded ApplyConfiguration calls answered with code.
func (c *cluster) applies(code codes.Code) int { return c.calls(applyRPC, code) }

// booted starts host and waits for its apid.
func (c *cluster) booted(host string, knobs talosnode.Knobs) {
	c.t.Helper()
	c.boot(host, knobs)
	if err := c.nodes[host].WaitAPI(5 * time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// TestApplyLiveOn114: Talos 1.14 applies any change live: no reboot, the
// same boot id, the new configuration running.
func TestApplyLiveOn114(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	res, err := cl.ApplyConfiguration(t.Context(), node, withEnv(t, c.configs[cp1]), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reboot || res.Mode != "NO_REBOOT" || res.BootID != c.nodes[cp1].BootID() {
		t.Errorf("apply on 1.14 = %+v, want NO_REBOOT with the current boot id %s", res, c.nodes[cp1].BootID())
	}
	if !c.runsEnv(cl) {
		t.Error("the applied configuration is not running")
	}
	if id, err := cl.BootID(t.Context(), node); err != nil || id != res.BootID {
		t.Errorf("boot id after a live apply = %q, %v; want %s", id, err, res.BootID)
	}
}

// TestApplyRebootOn113: a change Talos 1.13 cannot apply immediately is
// answered REBOOT; the node reboots into it, which its new boot id shows.
func TestApplyRebootOn113(t *testing.T) {
	t.Parallel()
	c := newClusterAt(t, talos113, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	before := c.nodes[cp1].BootID()
	res, err := cl.ApplyConfiguration(t.Context(), node, withEnv(t, c.configs[cp1]), false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reboot || res.Mode != "REBOOT" || res.BootID != before || !strings.Contains(res.Details, "can't be applied in immediate mode") {
		t.Fatalf("apply on 1.13 = %+v, want REBOOT with boot id %s", res, before)
	}
	var waited int
	if err := cl.WaitRebooted(t.Context(), node, res.BootID, 5*time.Second, 10*time.Millisecond, func(time.Duration) { waited++ }); err != nil {
		t.Fatal(err)
	}
	after, err := cl.BootID(t.Context(), node)
	if err != nil || after == before {
		t.Fatalf("boot id after the reboot = %q, %v (before %s)", after, err, before)
	}
	if !c.runsEnv(cl) {
		t.Error("the node did not reboot into the applied configuration")
	}
	if waited == 0 {
		t.Error("WaitRebooted reported no progress while the node rebooted")
	}
}

// TestApplyDryRun: a dry run tells a plan whether the apply would reboot
// that node, with Talos's diff, and changes nothing.
func TestApplyDryRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		reboot  bool
	}{{talos113, true}, {talosVersion, false}} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			c := newClusterAt(t, tc.version, 1, 0, talosnode.Options{})
			c.booted(cp1, talosnode.Knobs{})
			cl := c.dial(cp1, talosapi.Options{})
			res, err := cl.ApplyConfiguration(t.Context(), c.addr(cp1), withEnv(t, c.configs[cp1]), true)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reboot != tc.reboot || res.BootID != "" || !strings.Contains(res.Details, "Dry run summary") || !strings.Contains(res.Details, "TALOSC_TEST") {
				t.Errorf("dry run = %+v, want reboot %t and the diff", res, tc.reboot)
			}
			if c.runsEnv(cl) || c.nodes[cp1].Status().Boots != 1 {
				t.Errorf("a dry run changed the node: %+v", c.nodes[cp1].Status())
			}
		})
	}
}

// TestApplyAnswerLost: the answer to a 1.13 REBOOT apply is lost after
// the node acted on it. The retry finds the node rebooting, or down, or
// back with the configuration (NO_REBOOT): each time the first attempt's
// reboot, never a failure and never a second reboot.
func TestApplyAnswerLost(t *testing.T) {
	t.Parallel()
	c := newClusterAt(t, talos113, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	p := newLossyProxy(t, c.addrs[cp1], c.nodes[cp1].Endpoint())
	cl := c.dialEndpoint(p.endpoint(), talosapi.Options{RetryInterval: 200 * time.Millisecond})
	node := c.addr(cp1)
	if _, err := cl.BootID(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	before := c.nodes[cp1].BootID()
	p.loseNextBigAnswer()
	go func() {
		// the node answered (its answer held back by the proxy): break
		// the connection
		for c.applies(codes.OK) == 0 && t.Context().Err() == nil {
			time.Sleep(time.Millisecond)
		}
		p.dropAll()
	}()
	res, err := cl.ApplyConfiguration(t.Context(), node, withEnv(t, c.configs[cp1]), false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reboot || res.BootID != before {
		t.Errorf("apply after a lost answer = %+v, want the reboot from boot id %s", res, before)
	}
	if err := cl.WaitRebooted(t.Context(), node, res.BootID, 5*time.Second, 10*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if n := c.applies(codes.OK) + c.applies(codes.FailedPrecondition) + c.applies(codes.Unavailable); n < 2 {
		t.Errorf("%d ApplyConfiguration calls, want a retry after the lost answer", n)
	}
	if boots := c.nodes[cp1].Status().Boots; boots != 2 {
		t.Errorf("%d boots, want one reboot", boots)
	}
}

// TestApplyAnswerLostAfterItWasTaken: the node takes the apply and its
// answer never comes (apid's DeadlineExceeded, or a hang past our call's
// bound). The apply is asked again until the node answers: on 1.13 the
// one reboot it started, on 1.14 the live apply; never a failure, never a
// second reboot, and the configuration runs.
func TestApplyAnswerLostAfterItWasTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, version string
		lost          labnet.Fault
		reboot        bool
	}{
		{"1.13 deadline", talos113, labnet.Fault{Status: http.StatusGatewayTimeout}, true},
		{"1.13 hang", talos113, labnet.Fault{Hang: true}, true},
		{"1.14 deadline", talosVersion, labnet.Fault{Status: http.StatusGatewayTimeout}, false},
		{"1.14 hang", talosVersion, labnet.Fault{Hang: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inj := labnet.NewInjector(labnet.Knobs{})
			c := newClusterAt(t, tc.version, 1, 0, talosnode.Options{Injector: inj})
			c.booted(cp1, talosnode.Knobs{})
			cl := c.dial(cp1, talosapi.Options{CallTimeout: time.Second, RetryInterval: 100 * time.Millisecond, InstallTimeout: 30 * time.Second})
			node := c.addr(cp1)
			before := c.nodes[cp1].BootID()
			lost := tc.lost
			lost.Service, lost.PathPrefix, lost.Nth, lost.After = talosnode.ServiceName, strings.TrimSuffix(applyRPC, "?"), 1, true
			inj.Set(labnet.Knobs{Faults: []labnet.Fault{lost}})
			res, err := cl.ApplyConfiguration(t.Context(), node, withEnv(t, c.configs[cp1]), false)
			if err != nil {
				t.Fatalf("apply after a lost answer: %v", err)
			}
			if res.Reboot != tc.reboot || res.BootID != before {
				t.Fatalf("apply after a lost answer = %+v, want reboot %v from boot id %s", res, tc.reboot, before)
			}
			if tc.reboot {
				if err := cl.WaitRebooted(t.Context(), node, res.BootID, 10*time.Second, 10*time.Millisecond, nil); err != nil {
					t.Fatal(err)
				}
			}
			if !c.runsEnv(cl) {
				t.Error("the applied configuration is not running")
			}
			if want, boots := map[bool]int{true: 2, false: 1}[tc.reboot], c.nodes[cp1].Status().Boots; boots != want {
				t.Errorf("%d boots, want %d", boots, want)
			}
		})
	}
}
