package talosnode_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestLateWrites: a write RPC that is late fails at once (504 becomes
// DeadlineExceeded; a hang lasts until the client's deadline) and is not
// applied then; the node applies it LateBy after the client's answer
// ended, a unary call (ApplyConfiguration) and a streaming one (an image
// pull, its request replayed) alike; the recorder marks it late.
func TestLateWrites(t *testing.T) {
	t.Parallel()
	const lateBy = 1500 * time.Millisecond
	fx := newFixture(t, talos114)
	inj := labnet.NewInjector(labnet.Knobs{})
	l := newLab(t, fx, talosnode.Options{Injector: inj})
	t.Cleanup(func() { _ = inj.Close() })
	l.boot(cp(1))
	c := l.client(cp(1))
	for _, tc := range []struct {
		name    string
		fault   labnet.Fault
		timeout time.Duration
		want    codes.Code
	}{
		{"504", labnet.Fault{Status: http.StatusGatewayTimeout}, 5 * time.Second, codes.DeadlineExceeded},
		{"hang", labnet.Fault{Hang: true}, 300 * time.Millisecond, codes.DeadlineExceeded},
	} {
		f := tc.fault
		f.Service, f.Method, f.PathPrefix, f.Nth, f.Late = talosnode.ServiceName, labnet.MethodGRPCWrite, "/machine.MachineService/ApplyConfiguration", 1, true
		inj.Set(labnet.Knobs{LateBy: lateBy, Faults: []labnet.Fault{f}})
		l.rec.Reset()
		next := patched(t, fx.configs[cp(1)], "machine:\n  env:\n    LAB_LATE: "+tc.name+"\n")
		_, err := c.ApplyConfiguration(ctx(t, tc.timeout), &machine.ApplyConfigurationRequest{Data: next, Mode: machine.ApplyConfigurationRequest_AUTO})
		answered := time.Now()
		if status.Code(err) != tc.want {
			t.Fatalf("%s: the client got %v, want %v", tc.name, err, tc.want)
		}
		unchanged := func() bool {
			got, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, true)
			return err == nil && strings.HasSuffix(got.GetModeDetails(), "No changes.")
		}
		if unchanged() && time.Since(answered) < lateBy/2 {
			t.Fatalf("%s: applied with the answer, not LateBy after it", tc.name)
		}
		if muts := l.rec.Mutations(); len(muts) != 1 || !muts[0].Late || muts[0].Lost {
			t.Errorf("%s: recorded %+v, want one late write", tc.name, muts)
		}
		eventually(t, tc.name+": the late apply applied", unchanged)
		// answered is a little after the node ended the answer: leave room
		// for a busy machine
		if d := time.Since(answered); d < lateBy/2 {
			t.Errorf("%s: applied %v after the answer, want about %v", tc.name, d, lateBy)
		}
	}

	eventually(t, "the late applies returned", func() bool { return inj.Pending() == 0 })

	// A streaming write: the pull is replayed from the request read then.
	inj.Set(labnet.Knobs{LateBy: lateBy, Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/machine.ImageService/Pull", Nth: 1, Late: true}}})
	target := factory.InstallerRef("factory.talos.dev", "nocloud", fx.plan.Installers[0].SchematicID, "v1.14.3", false)
	if _, err := pull(t, c, systemContainerd, target); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("late pull: %v, want DeadlineExceeded", err)
	}
	inj.Set(labnet.Knobs{LateBy: lateBy})
	pulled := func() bool {
		progress, err := lifecycleUpgrade(t, c, systemContainerd, target)
		return err == nil && progress[len(progress)-1] == "Exit code: 0"
	}
	if inj.Pending() != 1 {
		t.Fatalf("%d late calls pending, want the pull", inj.Pending())
	}
	eventually(t, "the late pull applied", func() bool { return inj.Pending() == 0 })
	if !pulled() {
		t.Error("the late pull was not applied: an upgrade from its image fails")
	}
}
