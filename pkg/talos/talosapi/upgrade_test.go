package talosapi_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const (
	pullRPC    = "/machine.ImageService/Pull?"
	installRPC = "/machine.LifecycleService/Upgrade?"
	// upgradeTo is the version the upgrades install.
	upgradeTo = "v1.14.2"
	// plainInstaller is an installer not built by an Image Factory: no
	// schematic extension.
	plainInstaller = "ghcr.io/siderolabs/installer:v1.14.3"
)

// installerOf is host's installer at upgradeTo: its pool's factory image.
func (c *cluster) installerOf(host string) string {
	st := c.nodes[host].Status()
	return factory.InstallerRef("factory.talos.dev", st.Platform, st.Schematic, upgradeTo, false)
}

// rebooted reboots host through cl and waits for its new boot.
func (c *cluster) rebooted(cl *talosapi.Client, host string) {
	c.t.Helper()
	before := c.nodes[host].BootID()
	prev, err := cl.Reboot(c.t.Context(), c.addr(host))
	if err != nil || prev != before {
		c.t.Fatalf("Reboot = %q, %v; want the boot id before it, %s", prev, err, before)
	}
	if err := cl.WaitRebooted(c.t.Context(), c.addr(host), prev, 5*time.Second, 10*time.Millisecond, nil); err != nil {
		c.t.Fatal(err)
	}
}

// TestUpgradeThenReboot upgrades a worker through the control plane's
// endpoint as the nodes phase does: the install changes nothing running
// (no reboot, the same version), the reboot brings the new version; an
// installer without a schematic leaves none.
func TestUpgradeThenReboot(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(worker1)
	schematic := c.nodes[worker1].Status().Schematic
	if got, err := cl.Schematic(t.Context(), node); err != nil || got != schematic || len(got) != 64 {
		t.Fatalf("Schematic = %q, %v; want the node's factory schematic %q", got, err, schematic)
	}

	target := c.installerOf(worker1)
	var lines []string
	if err := cl.Upgrade(t.Context(), node, target, func(l string) { lines = append(lines, l) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"pulling " + target, "pulled " + target, "running installer " + target, "installed Talos v1.14.2, reboot to run it"}
	if !slices.Equal(lines, want) {
		t.Errorf("progress = %q, want %q", lines, want)
	}
	if c.calls(pullRPC, codes.OK) != 1 || c.calls(installRPC, codes.OK) != 1 {
		t.Errorf("calls: %+v; want one pull and one install", c.rec.Calls())
	}
	if v, err := cl.Version(t.Context(), node); err != nil || v != talosVersion || c.nodes[worker1].Status().Boots != 1 {
		t.Fatalf("after the install: Version = %q, %v, %d boots; want %s and no reboot", v, err, c.nodes[worker1].Status().Boots, talosVersion)
	}
	c.rebooted(cl, worker1)
	if v, err := cl.Version(t.Context(), node); err != nil || v != upgradeTo {
		t.Fatalf("after the reboot: Version = %q, %v; want v1.14.2", v, err)
	}
	if st := c.nodes[cp1].Status(); st.Version != talosVersion || st.Boots != 1 {
		t.Errorf("the endpoint was upgraded or rebooted: %+v", st)
	}

	if err := cl.Upgrade(t.Context(), node, plainInstaller, nil); err != nil {
		t.Fatal(err)
	}
	c.rebooted(cl, worker1)
	// The lab publishes a boot's resources just after its apid is up: a
	// call forwarded at once may still see the previous boot's.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := cl.Schematic(t.Context(), node)
		if err == nil && got == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Schematic of a node running %s = %q, %v; want none", plainInstaller, got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUpgradeAlreadyInProgress: an Upgrade while another install runs on
// the node is refused, and says so; the first one completes.
func TestUpgradeAlreadyInProgress(t *testing.T) {
	t.Parallel()
	timing := talosnode.Timing{Boot: 20 * time.Millisecond, Services: 40 * time.Millisecond, Install: time.Minute, HealthPoll: 10 * time.Millisecond}
	c := newCluster(t, 1, 0, talosnode.Options{Timing: timing})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	target := c.installerOf(cp1)
	ctx, cancel := context.WithCancel(t.Context())
	running := make(chan struct{})
	var once sync.Once
	first := make(chan error, 1)
	go func() {
		first <- cl.Upgrade(ctx, node, target, func(l string) {
			if strings.HasPrefix(l, "running installer") {
				once.Do(func() { close(running) })
			}
		})
	}()
	select {
	case <-running:
	case err := <-first:
		t.Fatalf("the first Upgrade ended before its installer ran: %v", err)
	}
	err := cl.Upgrade(t.Context(), node, target, nil)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "talos Upgrade to "+target+" on "+node+": ") ||
		!strings.Contains(err.Error(), "already in progress") || !strings.Contains(err.Error(), "this one did not start") {
		t.Errorf("a second Upgrade = %v, want it refused as already in progress", err)
	}
	cancel()
	if err := <-first; status.Code(err) != codes.Canceled {
		t.Errorf("the canceled first Upgrade = %v", err)
	}
}

// TestUpgradeAnswerLost: the install's stream never answers (a labnet
// hang): the caller sees the install's timeout, says the installer may
// have run, and it is no install failure. When the node ran the installer
// but its answer was lost on the way back, the caller sees the same "may
// have run", and rightly so: a reboot brings the new Talos.
func TestUpgradeAnswerLost(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	node := c.addr(cp1)
	target := c.installerOf(cp1)

	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: installRPC, Hang: true}}})
	cl := c.dial(cp1, talosapi.Options{InstallTimeout: 300 * time.Millisecond})
	err := cl.Upgrade(t.Context(), node, target, nil)
	want := "talos Upgrade to " + target + " on " + node + ": timed out after 300ms (an answer was lost: the installer may have run)"
	if err == nil || err.Error() != want || errors.Is(err, talosapi.ErrInstallFailed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Upgrade whose stream hangs = %v, want %q", err, want)
	}
	inj.Set(labnet.Knobs{})

	p := newLossyProxy(t, c.addrs[cp1], c.nodes[cp1].Endpoint())
	lossy := c.dialEndpoint(p.endpoint(), talosapi.Options{})
	installed := c.calls(installRPC, codes.OK)
	go func() {
		// once the node has installed, break the connection its answers
		// are held back on
		for c.calls(installRPC, codes.OK) == installed && t.Context().Err() == nil {
			time.Sleep(time.Millisecond)
		}
		p.dropAll()
	}()
	err = lossy.Upgrade(t.Context(), node, target, func(l string) {
		if strings.HasPrefix(l, "pulled ") {
			p.holdAnswers() // the install's answers
		}
	})
	if status.Code(err) != codes.Unavailable || !strings.HasPrefix(err.Error(), "talos Upgrade to "+target+" on "+node+": ") ||
		!strings.HasSuffix(err.Error(), "(an answer was lost: the installer may have run)") {
		t.Fatalf("Upgrade whose answer was lost = %v, want Unavailable, the installer may have run", err)
	}
	c.rebooted(cl, cp1)
	if v, err := cl.Version(t.Context(), node); err != nil || v != upgradeTo {
		t.Errorf("after the reboot: Version = %q, %v; the lost install did run", v, err)
	}
}

// TestUpgradeInstallFails: an installer that exits non-zero fails the
// Upgrade with ErrInstallFailed and its last words; the node keeps its
// Talos.
func TestUpgradeInstallFails(t *testing.T) {
	t.Parallel()
	knobs := failingInstaller(t)
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.booted(cp1, knobs)
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	err := cl.Upgrade(t.Context(), node, c.installerOf(cp1), nil)
	if !errors.Is(err, talosapi.ErrInstallFailed) || !strings.Contains(err.Error(), "installer failed with exit code ") || !strings.Contains(err.Error(), "its last messages: ") {
		t.Fatalf("Upgrade with a failing installer = %v, want ErrInstallFailed with its messages", err)
	}
	c.rebooted(cl, cp1)
	if v, err := cl.Version(t.Context(), node); err != nil || v != talosVersion {
		t.Errorf("after a failed install and a reboot: Version = %q, %v; want %s", v, err, talosVersion)
	}
}

// failingInstaller is the knobs of a node whose installer exits non-zero.
func failingInstaller(t *testing.T) talosnode.Knobs {
	t.Helper()
	return talosnode.Knobs{InstallFails: "disk /dev/vda: no space left on device"}
}

// TestRebootRefusesBlind: a node whose boot id cannot be read is not
// rebooted: the reboot could not be told.
func TestRebootRefusesBlind(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/machine.MachineService/Read?", Status: http.StatusForbidden}}})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	prev, err := c.dial(cp1, talosapi.Options{}).Reboot(t.Context(), c.addr(cp1))
	if prev != "" || status.Code(err) != codes.PermissionDenied || !strings.HasPrefix(err.Error(), "talos Reboot on "+c.addr(cp1)+": not rebooting without the boot id") {
		t.Errorf("Reboot without a boot id = %q, %v", prev, err)
	}
	if n := c.calls("/machine.MachineService/Reboot?", codes.OK); n != 0 || c.nodes[cp1].Status().Boots != 1 {
		t.Errorf("%d Reboot calls, %d boots; want none and one", n, c.nodes[cp1].Status().Boots)
	}
}
