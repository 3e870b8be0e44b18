package proxmox_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

const uploadPath = "/api2/json/nodes/pve1/storage/local/upload"

// cidataISOs are the cidata ISOs on the lab's storages.
func (l *pxLab) cidataISOs() []string {
	var out []string
	for _, v := range l.srv.Volumes("pve1", "") {
		if strings.Contains(v.VolID, "taloscluster-cidata-") {
			out = append(out, v.VolID)
		}
	}
	return out
}

// specsWith are the lab cluster's machines booting from a fresh boot ISO.
func (l *pxLab) specsWith(t *testing.T) []provider.MachineSpec {
	t.Helper()
	img, err := l.ensureISO(t, isoSpec(t), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []provider.MachineSpec
	for _, m := range l.cfg.Hostnames() {
		specs = append(specs, provider.MachineSpec{Machine: m, Config: userData(m.Hostname), Image: img})
	}
	return specs
}

// Ctrl-C while a cidata upload is in flight (the lab holds it without an
// answer) ends the create at once with context.Canceled, and no ISO is
// left on storage.
func TestCreateMachines_CtrlCStopsACidataUpload(t *testing.T) {
	t.Parallel()
	l := faultLab(t, "", labnet.Fault{Service: labpx.Service, Method: http.MethodPost, PathPrefix: uploadPath, Hang: true})
	specs := l.specsWith(t)
	ctx, cancel := context.WithCancel(t.Context())
	l.srv.Recorder().OnArrival(func(c labnet.Call) {
		if c.Method == http.MethodPost && c.Path == uploadPath {
			cancel()
		}
	})
	_, err := l.cloud.CreateMachines(ctx, l.cfg, specs[:1], &provider.Plan{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("create: %v, want context.Canceled", err)
	}
	if isos := l.cidataISOs(); len(isos) != 0 {
		t.Errorf("cidata ISOs left: %v", isos)
	}
}

// Ctrl-C after a cidata upload was applied but before its answer came
// still removes the ISO: the cleanup outlives the cancelled context.
func TestCreateMachines_CtrlCAfterAnUploadRemovesTheISO(t *testing.T) {
	t.Parallel()
	l := faultLab(t, "", labnet.Fault{Service: labpx.Service, Method: http.MethodPost, PathPrefix: uploadPath, Hang: true, After: true})
	specs := l.specsWith(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for len(l.cidataISOs()) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := l.cloud.CreateMachines(ctx, l.cfg, specs[:1], &provider.Plan{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("create: %v, want context.Canceled", err)
	}
	if isos := l.cidataISOs(); len(isos) != 0 {
		t.Errorf("cidata ISOs left: %v", isos)
	}
}

// A run interrupted the moment its first VM exists leaves that VM
// recognisably talosc's (pool, tags and description came with the
// create) with the cidata ISO it boots from; the next run adopts it,
// creates the rest, and ends with the whole inventory of an
// uninterrupted run.
func TestCreateMachines_ARunStoppedRightAfterACreateIsAdoptedNextTime(t *testing.T) {
	t.Parallel()
	want, _ := faultLab(t, "").lifecycle(t)
	l := faultLab(t, "")
	specs := l.specsWith(t)
	ctx, cancel := context.WithCancel(t.Context())
	l.srv.OnEvent(func(e labpx.Event) {
		if e.Kind == labpx.VMCreated {
			cancel()
		}
	})
	if _, err := l.cloud.CreateMachines(ctx, l.cfg, specs, &provider.Plan{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted create: %v, want context.Canceled", err)
	}
	inv := l.inventory(t)
	if len(inv.Machines) == 0 {
		t.Fatalf("no VM adopted; lab VMs %+v", l.srv.VMs())
	}
	for _, m := range inv.Machines {
		if !slices.ContainsFunc(l.cidataISOs(), func(v string) bool { return strings.HasSuffix(v, "/"+proxmox.CidataFile("c", m.Hostname)) }) {
			t.Errorf("%s lost its cidata ISO", m.Hostname)
		}
	}
	// The next run, as the nodes phase runs it.
	var missing []provider.MachineSpec
	for _, s := range specs {
		if !slices.ContainsFunc(inv.Machines, func(m provider.Machine) bool { return m.Hostname == s.Machine.Hostname }) {
			missing = append(missing, s)
		}
	}
	if err := l.cloud.ReconcileMachines(t.Context(), l.cfg, inv, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.CreateMachines(t.Context(), l.cfg, missing, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), l.cfg, l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if diff := inventory.Diff(want, l.srv.Snapshot()); diff != nil {
		t.Errorf("against an uninterrupted run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
	}
}
