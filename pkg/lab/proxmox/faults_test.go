package proxmox_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/proxmox"
)

func TestFaultKnobs(t *testing.T) {
	t.Parallel()
	inj, rec := labnet.NewInjector(labnet.Knobs{}), &labnet.Recorder{}
	srv := startLab(t, proxmox.Options{Injector: inj, Recorder: rec})
	c, ctx := adminClient(t, srv), t.Context()

	// The knobs are switched one after the other on one injector.
	{ // latency
		inj.Set(labnet.Knobs{Latency: 40 * time.Millisecond})
		start := time.Now()
		if _, err := c.Version(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 40*time.Millisecond {
			t.Errorf("call took %v, want >= 40ms", d)
		}
	}
	{ // error rate
		inj.Set(labnet.Knobs{ErrorRate: 1})
		var apiErr *goproxmox.APIError
		if _, err := c.Version(ctx); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("err = %v, want 503", err)
		}
	}
	{ // hang until the client gives up
		inj.Set(labnet.Knobs{HangRate: 1})
		hc := trustingClient(t, srv)
		hc.Timeout = 100 * time.Millisecond
		short := goproxmox.NewClient(srv.APIURL, goproxmox.WithAPIToken(proxmox.DefaultTokenID, proxmox.DefaultTokenSecret), goproxmox.WithHTTPClient(hc))
		start := time.Now()
		if _, err := short.Version(ctx); err == nil || !strings.Contains(err.Error(), "Client.Timeout") {
			t.Errorf("err = %v, want a client timeout", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("hang outlived the client's deadline: %v", d)
		}
	}
	{ // scripted: fail the second POST under /nodes/pve1/qemu
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: proxmox.Service, Method: "POST", PathPrefix: "/api2/json/nodes/pve1/qemu", Nth: 2, Status: 500}}})
		w, node := waiter(t), c.NodeRef("pve1")
		w(node.NewVirtualMachine(ctx, 100, opt("name", "a")))
		if _, err := node.NewVirtualMachine(ctx, 101, opt("name", "b")); err == nil || !strings.Contains(err.Error(), "500") {
			t.Errorf("second create: err = %v, want the scripted 500", err)
		}
		w(node.NewVirtualMachine(ctx, 101, opt("name", "b")))
	}
	inj.Set(labnet.Knobs{})

	var injected, ok int
	for _, call := range rec.Calls() {
		if call.Service != proxmox.Service {
			t.Errorf("call recorded under %q", call.Service)
		}
		switch call.Status {
		case http.StatusServiceUnavailable, http.StatusInternalServerError, 499:
			injected++
		case http.StatusOK:
			ok++
		}
	}
	if injected < 3 || ok < 5 {
		t.Errorf("recorder saw %d injected and %d ok calls: %+v", injected, ok, rec.Calls())
	}
}

// TestSeededFaultsReplay runs the same calls against two servers with the
// same seed: the same calls fail.
func TestSeededFaultsReplay(t *testing.T) {
	t.Parallel()
	pattern := func() string {
		srv := startLab(t, proxmox.Options{Injector: labnet.NewInjector(labnet.Knobs{ErrorRate: 0.5, Seed: 42})})
		c := adminClient(t, srv)
		var b strings.Builder
		for range 24 {
			if _, err := c.Version(t.Context()); err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Errorf("patterns %q and %q: want equal, mixed", a, b)
	}
}

func TestNodeGoesOffline(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx := t.Context()
	if err := srv.SetNodeOnline("pve2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodeRef("pve2").Storages(ctx); !goproxmox.IsNodeUnreachable(err) {
		t.Errorf("offline node: err = %v, want 595", err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || nodes[1].Status != "offline" || nodes[1].MaxMem != 0 {
		t.Errorf("nodes = %+v, %v", nodes, err)
	}
	if err := srv.SetNodeOnline("pve2", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodeRef("pve2").Storages(ctx); err != nil {
		t.Errorf("back online: %v", err)
	}
}

// TestFaultLateVMCreate: a late VM create answers 504 and makes nothing
// then; Proxmox makes the VM LateBy after that answer.
func TestFaultLateVMCreate(t *testing.T) {
	t.Parallel()
	const lateBy = 300 * time.Millisecond
	inj := labnet.NewInjector(labnet.Knobs{LateBy: lateBy, Faults: []labnet.Fault{
		{Service: proxmox.Service, Method: "POST", PathPrefix: "/api2/json/nodes/pve1/qemu", Nth: 1, Late: true},
	}})
	t.Cleanup(func() { _ = inj.Close() })
	srv := startLab(t, proxmox.Options{Injector: inj})
	c, ctx := adminClient(t, srv), t.Context()
	node := c.NodeRef("pve1")
	if _, err := node.NewVirtualMachine(ctx, 100, opt("name", "late")); err == nil || !strings.Contains(err.Error(), "504") {
		t.Fatalf("late create: err = %v, want 504", err)
	}
	if _, err := node.VirtualMachine(ctx, 100); err == nil {
		t.Fatal("the VM exists right after the 504")
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, err := node.VirtualMachine(ctx, 100); err != nil; _, err = node.VirtualMachine(ctx, 100) {
		if time.Now().After(deadline) {
			t.Fatalf("the late VM never appeared: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
