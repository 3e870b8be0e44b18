package talosnode_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestLostAnswers: a write RPC whose answer is lost (502, 504, a reset
// connection, a hang past the client's deadline; on the entry node or on
// the node apid forwards to; a streaming write) was applied all the same,
// and the recorder marks it lost; LostRate loses writes, never reads.
func TestLostAnswers(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	inj := labnet.NewInjector(labnet.Knobs{})
	l := newLab(t, fx, talosnode.Options{Injector: inj})
	l.boot(cp(1), cp(2))
	cp2 := fx.addrs[cp(2)].String()
	const applyRPC = "/machine.MachineService/ApplyConfiguration"
	for i, tc := range []struct {
		name    string
		fault   labnet.Fault
		via     string // the node the client talks to; the fault is on cp-02
		timeout time.Duration
		want    func(error) bool
	}{
		{"502", labnet.Fault{Status: http.StatusBadGateway}, cp(2), 5 * time.Second, code(codes.Unavailable, "injected fault: bad gateway")},
		{"504", labnet.Fault{Status: http.StatusGatewayTimeout}, cp(2), 5 * time.Second, code(codes.DeadlineExceeded, "injected fault: gateway timeout")},
		{"reset", labnet.Fault{Reset: true}, cp(2), 5 * time.Second, func(err error) bool {
			// the client read a dropped connection, not an answer
			return status.Code(err) == codes.Unavailable && !contains(err, "injected fault")
		}},
		{"hang", labnet.Fault{Hang: true}, cp(2), 300 * time.Millisecond, code(codes.DeadlineExceeded, "")},
		{"forwarded 504", labnet.Fault{Status: http.StatusGatewayTimeout}, cp(1), 5 * time.Second, code(codes.DeadlineExceeded, "injected fault: gateway timeout")},
	} {
		f := tc.fault
		f.Service, f.Method, f.PathPrefix, f.Nth, f.After = talosnode.ServiceName, labnet.MethodGRPCWrite, applyRPC+"?node="+cp2, 1, true
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{f}})
		l.rec.Reset()
		next := patched(t, fx.configs[cp(2)], fmt.Sprintf("machine:\n  env:\n    LAB_LOST: %q\n", fmt.Sprint(i)))
		c := l.client(tc.via)
		cctx := ctx(t, tc.timeout)
		if tc.via != cp(2) {
			cctx = client.WithNode(cctx, cp2)
		}
		_, err := c.ApplyConfiguration(cctx, &machine.ApplyConfigurationRequest{Data: next, Mode: machine.ApplyConfigurationRequest_AUTO})
		if !tc.want(err) {
			t.Errorf("%s: the client got %v", tc.name, err)
		}
		same, err := apply(t, l.client(cp(2)), next, machine.ApplyConfigurationRequest_AUTO, true)
		if err != nil || !strings.HasSuffix(same.GetModeDetails(), "No changes.") {
			t.Errorf("%s: the apply whose answer was lost was not applied: %v %q", tc.name, err, same.GetModeDetails())
		}
		if muts := l.rec.Mutations(); tc.via == cp(2) && (len(muts) != 1 || !muts[0].Lost) {
			t.Errorf("%s: recorded %+v, want one write, lost", tc.name, muts)
		}
	}

	// A streaming write: the pull happened though its answer was lost.
	c := l.client(cp(2))
	image := "registry.k8s.io/pause:3.10"
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/machine.ImageService/Pull", Nth: 1, Status: http.StatusBadGateway, After: true}}})
	if _, err := pull(t, c, systemContainerd, image); status.Code(err) != codes.Unavailable {
		t.Errorf("lost pull: %v, want Unavailable", err)
	}
	if _, err := lifecycleUpgrade(t, c, systemContainerd, image); !contains(err, "failed to create task") {
		t.Errorf("the pull whose answer was lost was not applied: an upgrade from its image says %v", err)
	}

	// LostRate 1: every write is applied and its answer lost; reads answer.
	inj.Set(labnet.Knobs{LostRate: 1, Seed: 7})
	if _, err := c.Version(ctx(t, 2*time.Second)); err != nil {
		t.Errorf("a read under lost rate 1: %v", err)
	}
	target := factory.InstallerRef("factory.talos.dev", "nocloud", fx.plan.Installers[0].SchematicID, "v1.14.3", false)
	if _, err := pull(t, c, systemContainerd, target); err == nil {
		t.Error("a write under lost rate 1 got its answer")
	}
	inj.Set(labnet.Knobs{})
	if progress, err := lifecycleUpgrade(t, c, systemContainerd, target); err != nil || progress[len(progress)-1] != "Exit code: 0" {
		t.Errorf("the installer pull whose answer was lost was not applied: %v %v", progress, err)
	}
}

// code is a check that an error has code c and contains msg.
func code(c codes.Code, msg string) func(error) bool {
	return func(err error) bool { return status.Code(err) == c && strings.Contains(fmt.Sprint(err), msg) }
}
