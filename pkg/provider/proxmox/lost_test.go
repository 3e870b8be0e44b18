package proxmox_test

import (
	"context"
	"errors"
	"fmt"
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

// lostAs are the ways a proxy loses the answer of an applied request.
var lostAs = []struct {
	name  string
	fault labnet.Fault
}{
	{"502", labnet.Fault{Status: http.StatusBadGateway, After: true}},
	{"504", labnet.Fault{Status: http.StatusGatewayTimeout, After: true}},
	{"reset", labnet.Fault{Reset: true, After: true}},
	{"hang", labnet.Fault{Hang: true, After: true}},
}

// faultLab is a one-node lab (netCluster as in labCluster) injecting
// faults, with a Cloud that gives up on a request after a second and on
// an upload or task after three, so a hung answer costs little.
func faultLab(t *testing.T, netCluster string, faults ...labnet.Fault) *pxLab {
	t.Helper()
	l := newLab(t, labpx.Options{DatacenterFirewall: true, Injector: labnet.NewInjector(labnet.Knobs{Faults: faults})}, nil, labCluster{netCluster: netCluster})
	l.connectFast(t)
	return l
}

// connectFast connects l's Cloud to l.cfg's URL with faultLab's short
// budgets and forgets the calls it made.
func (l *pxLab) connectFast(t *testing.T) {
	t.Helper()
	var err error
	l.cloud, err = proxmox.Connect(t.Context(), l.cfg, proxmox.Options{
		Poll: 10 * time.Millisecond, TaskTimeout: 3 * time.Second, RequestTimeout: time.Second,
		Logf: l.logs.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	l.srv.Recorder().Reset()
}

// lifecycle runs what a converge and a destroy do to the lab's VMs: the
// boot ISO, every VM (cidata, firewall, start), finalize, then destroy.
// It returns the whole inventory after finalize and after destroy.
func (l *pxLab) lifecycle(t *testing.T) (built, destroyed inventory.Snapshot) {
	t.Helper()
	if _, err := l.cloud.CreateMachines(t.Context(), l.machineSpecs(t), &provider.Plan{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	built = l.srv.Snapshot()
	if err := l.cloud.DestroyMachines(t.Context(), l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	return built, l.srv.Snapshot()
}

// lostCalls counts the requests whose answer the lab threw away.
func (l *pxLab) lostCalls() int {
	n := 0
	for _, c := range l.srv.Recorder().Calls() {
		if c.Lost {
			n++
		}
	}
	return n
}

// lostCall is a mutating call whose answer is lost: the nth request of
// method under path (Nth 0 is the first).
type lostCall struct {
	name, method, path string
	nth                int
}

// steps runs a scenario's steps in a lab and returns the whole inventory
// after each.
type steps func(t *testing.T, l *pxLab) (built, destroyed inventory.Snapshot)

// eachLost runs run in a fault-free lab, then once per call and way of
// losing its answer in a lab that loses exactly that answer, and checks
// that each run ends every step with the fault-free run's whole
// inventory.
func eachLost(t *testing.T, netCluster string, calls []lostCall, run steps) {
	t.Helper()
	wantBuilt, wantDestroyed := run(t, faultLab(t, netCluster))
	for _, call := range calls {
		for _, lost := range lostAs {
			t.Run(call.name+"/"+lost.name, func(t *testing.T) {
				t.Parallel()
				f := lost.fault
				f.Service, f.Method, f.PathPrefix, f.Nth = labpx.Service, call.method, call.path, max(call.nth, 1)
				l := faultLab(t, netCluster, f)
				built, destroyed := run(t, l)
				if n := l.lostCalls(); n != 1 {
					t.Errorf("%d answers lost, want 1", n)
				}
				if diff := inventory.Diff(wantBuilt, built); diff != nil {
					t.Errorf("after the build, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
				if diff := inventory.Diff(wantDestroyed, destroyed); diff != nil {
					t.Errorf("after destroy, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
			})
		}
	}
}

// Every mutating call of a converge and a destroy, its answer lost after
// it was applied (502, 504, a reset, a hang past the request timeout),
// ends in one run with exactly the whole inventory of a fault-free run:
// no duplicate VM, rule or ISO, nothing left over, nothing missing.
func TestLostAnswers_EveryCallEndsAsAFaultFreeRun(t *testing.T) {
	t.Parallel()
	const vm = "/api2/json/nodes/pve1/qemu/101"
	eachLost(t, "", []lostCall{
		{"pool create", http.MethodPost, "/api2/json/pools", 0},
		{"ISO download-url", http.MethodPost, "/api2/json/nodes/pve1/storage/local/download-url", 0},
		{"cidata upload", http.MethodPost, uploadPath, 2},
		{"VM create", http.MethodPost, "/api2/json/nodes/pve1/qemu", 2},
		{"firewall options", http.MethodPut, vm + "/firewall/options", 0},
		{"firewall rule", http.MethodPost, vm + "/firewall/rules", 3},
		{"VM start", http.MethodPost, vm + "/status/start", 0},
		{"finalize detach", http.MethodPut, vm + "/config", 0},
		{"cidata delete", http.MethodDelete, "/api2/json/nodes/pve1/storage/local/content", 2},
		{"VM stop", http.MethodPost, vm + "/status/stop", 0},
		{"VM delete", http.MethodDelete, vm, 0},
		{"pool delete", http.MethodDelete, "/api2/json/pools", 0},
	}, func(t *testing.T, l *pxLab) (built, destroyed inventory.Snapshot) {
		t.Helper()
		return l.lifecycle(t)
	})
}

// The managed SDN's creates, deletes and applies, each with its answer
// lost, end in one run as a fault-free run does.
func TestLostAnswers_SDNEndsAsAFaultFreeRun(t *testing.T) {
	t.Parallel()
	const sdn = "/api2/json/cluster/sdn"
	eachLost(t, labSDN, []lostCall{
		{"controller create", http.MethodPost, sdn + "/controllers", 0},
		{"zone create", http.MethodPost, sdn + "/zones", 0},
		{"vnet create", http.MethodPost, sdn + "/vnets", 0},
		{"subnet create", http.MethodPost, sdn + "/vnets/labsdn/subnets", 0},
		{"apply", http.MethodPut, sdn, 0},
		{"subnet delete", http.MethodDelete, sdn + "/vnets/labsdn/subnets/", 0},
		{"zone delete", http.MethodDelete, sdn + "/zones/labsdn", 0},
	}, func(t *testing.T, l *pxLab) (built, destroyed inventory.Snapshot) {
		t.Helper()
		if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
			t.Fatalf("reconcile: %v\nlog:\n%s", err, l.logs)
		}
		built = l.srv.Snapshot()
		if err := l.cloud.DestroyNetwork(t.Context(), &provider.Plan{}); err != nil {
			t.Fatalf("destroy: %v\nlog:\n%s", err, l.logs)
		}
		return built, l.srv.Snapshot()
	})
}

// cidataVolumes are the cidata ISOs on the lab's storages.
func (l *pxLab) cidataVolumes() []labpx.VolumeInfo {
	var out []labpx.VolumeInfo
	for _, v := range l.srv.Volumes("pve1", "") {
		if strings.Contains(v.VolID, "taloscluster-cidata-") {
			out = append(out, v)
		}
	}
	return out
}

// cidataISOs are the volume ids of the cidata ISOs on the lab's storages.
func (l *pxLab) cidataISOs() []string {
	var out []string
	for _, v := range l.cidataVolumes() {
		out = append(out, v.VolID)
	}
	return out
}

// Ctrl-C while a cidata upload is in flight ends the create at once with
// context.Canceled and leaves no ISO on storage: when the lab holds the
// upload unanswered (not applied), and when it applied it and holds the
// answer (the cleanup outlives the cancelled context).
func TestCreateMachines_CtrlCStopsACidataUpload(t *testing.T) {
	t.Parallel()
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			t.Parallel()
			l := faultLab(t, "", labnet.Fault{Service: labpx.Service, Method: http.MethodPost, PathPrefix: uploadPath, Hang: true, After: applied})
			specs := l.machineSpecs(t)
			ctx, cancel := context.WithCancel(t.Context())
			l.srv.Recorder().OnArrival(func(c labnet.Call) {
				if c.Method == http.MethodPost && c.Path == uploadPath && !applied {
					cancel()
				}
			})
			go func() { // once the upload is applied
				for applied && len(l.cidataISOs()) == 0 && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			_, err := l.cloud.CreateMachines(ctx, specs[:1], &provider.Plan{})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("create: %v, want context.Canceled", err)
			}
			if isos := l.cidataISOs(); len(isos) != 0 {
				t.Errorf("cidata ISOs left: %v", isos)
			}
		})
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
	specs := l.machineSpecs(t)
	ctx, cancel := context.WithCancel(t.Context())
	l.srv.OnEvent(func(e labpx.Event) {
		if e.Kind == labpx.VMCreated {
			cancel()
		}
	})
	if _, err := l.cloud.CreateMachines(ctx, specs, &provider.Plan{}); !errors.Is(err, context.Canceled) {
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
	if err := l.cloud.ReconcileMachines(t.Context(), inv, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.CreateMachines(t.Context(), missing, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	if diff := inventory.Diff(want, l.srv.Snapshot()); diff != nil {
		t.Errorf("against an uninterrupted run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
	}
}
