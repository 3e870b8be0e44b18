package talosnode_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// readBootID reads the kernel's boot id as talosctl's reboot tracker does.
func readBootID(t *testing.T, c *client.Client) string {
	t.Helper()
	r, err := c.Read(ctx(t, 2*time.Second), "/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestBootIDPerBoot: every boot has its own boot id, served as the
// kernel's file on every version and as the BootID resource from 1.14.
func TestBootIDPerBoot(t *testing.T) {
	t.Parallel()
	for _, version := range []string{talos114, talos113} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, newFixture(t, version), talosnode.Options{})
			l.boot(worker, cp(1))
			n := l.nodes[cp(1)]
			c := l.client(cp(1))
			first := readBootID(t, c)
			if first == "" || first != n.BootID() {
				t.Fatalf("boot id %q, node says %q", first, n.BootID())
			}
			res, err := safe.StateGetByID[*runtime.BootID](ctx(t, 2*time.Second), c.COSI, runtime.BootIDID)
			switch {
			case version == talos114 && (err != nil || res.TypedSpec().BootID != first):
				t.Errorf("BootID resource = %v, %v; want %s", res, err, first)
			case version == talos113 && !state.IsNotFoundError(err):
				t.Errorf("Talos 1.13 serves a BootID resource: %v, %v", res, err)
			}
			boots := n.Status().Boots
			n.Restart()
			l.waitReboot(cp(1), boots)
			if again := readBootID(t, c); again == first || again != n.BootID() {
				t.Errorf("boot id after a reboot %q (before %q, node %q)", again, first, n.BootID())
			}
		})
	}
}

// TestFileReadNeedsAdmin: Read is os:admin only, and a missing file is
// NotFound.
func TestFileReadNeedsAdmin(t *testing.T) {
	t.Parallel()
	l := newLab(t, newFixture(t, talos114), talosnode.Options{})
	l.boot(cp(1))
	r, err := l.clientAs(cp(1), "os:reader").Read(ctx(t, 2*time.Second), "/proc/sys/kernel/random/boot_id")
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("Read as a reader: %v", err)
	}
	r, err = l.client(cp(1)).Read(ctx(t, 2*time.Second), "/etc/os-release")
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if status.Code(err) != codes.NotFound {
		t.Errorf("Read of a missing file: %v", err)
	}
}

// TestResetEvents: a reset's events carry its actor id; a failed one ends
// with a fatal sequence error, a successful one with stopAllServices.
func TestResetEvents(t *testing.T) {
	t.Parallel()
	l := newLab(t, newFixture(t, talos114), talosnode.Options{})
	l.boot(cp(1), worker)
	c := l.client(worker)
	l.nodes[worker].SetKnobs(talosnode.Knobs{ResetFails: "disk on fire"})
	events := make(chan client.EventResult, 16)
	if err := c.EventsWatchV2(ctx(t, 5*time.Second), events); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ResetGenericWithResponse(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true})
	if err != nil {
		t.Fatal(err)
	}
	actor := resp.GetMessages()[0].GetActorId()
	var got []string
	for len(got) < 3 {
		e := <-events
		if e.Error != nil {
			t.Fatal(e.Error)
		}
		if e.Event.ActorID != actor {
			t.Errorf("event %v has actor %q, want %q", e.Event.Payload, e.Event.ActorID, actor)
		}
		seq := e.Event.Payload.(*machine.SequenceEvent)
		got = append(got, seq.GetAction().String()+" "+seq.GetError().GetMessage())
	}
	want := []string{"START ", "STOP ", "NOOP sequence failed: error running phase 4 in reset sequence: task 1/1: failed, disk on fire"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("reset events %q, want %q", got, want)
	}

	// the whole buffer, again, for a late watcher; then a reset that works
	tail := make(chan client.EventResult, 16)
	if err := c.EventsWatchV2(ctx(t, 5*time.Second), tail, client.WithTailEvents(-1), client.WithActorID(actor)); err != nil {
		t.Fatal(err)
	}
	for range want {
		if e := <-tail; e.Error != nil || e.Event.ActorID != actor {
			t.Fatalf("tailed event %+v", e)
		}
	}
	l.nodes[worker].SetKnobs(talosnode.Knobs{})
	if err := c.ResetGeneric(ctx(t, 2*time.Second), &machine.ResetRequest{Graceful: true}); err != nil {
		t.Fatal(err)
	}
	for e := range events {
		if e.Error != nil {
			t.Fatalf("stream ended before stopAllServices: %v", e.Error)
		}
		if task, ok := e.Event.Payload.(*machine.TaskEvent); ok && task.GetTask() == "stopAllServices" {
			return
		}
	}
}
