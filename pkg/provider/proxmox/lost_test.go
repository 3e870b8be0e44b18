package proxmox_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

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
	var err error
	l.cloud, err = proxmox.Connect(t.Context(), l.cfg, proxmox.Options{
		Poll: 10 * time.Millisecond, TaskTimeout: 3 * time.Second, RequestTimeout: time.Second,
		Logf: func(format string, args ...any) { fmt.Fprintf(l.logs, format+"\n", args...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	l.srv.Recorder().Reset()
	return l
}

// lifecycle runs what a converge and a destroy do to the lab's VMs: the
// boot ISO, every VM (cidata, firewall, start), finalize, then destroy.
// It returns the whole inventory after finalize and after destroy.
func (l *pxLab) lifecycle(t *testing.T) (built, destroyed inventory.Snapshot) {
	t.Helper()
	img, err := l.ensureISO(t, isoSpec(t), &provider.Plan{})
	if err != nil {
		t.Fatalf("boot ISO: %v", err)
	}
	var specs []provider.MachineSpec
	for _, m := range l.cfg.Hostnames() {
		specs = append(specs, provider.MachineSpec{Machine: m, Config: userData(m.Hostname), Image: img})
	}
	if _, err := l.cloud.CreateMachines(t.Context(), l.cfg, specs, &provider.Plan{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), l.cfg, l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	built = l.srv.Snapshot()
	if err := l.cloud.DestroyMachines(t.Context(), l.cfg, l.inventory(t), &provider.Plan{}); err != nil {
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

// Every mutating call of a converge and a destroy, its answer lost after
// it was applied (502, 504, a reset, a hang past the request timeout),
// ends in one run with exactly the whole inventory of a fault-free run:
// no duplicate VM, rule or ISO, nothing left over, nothing missing.
func TestLostAnswers_EveryCallEndsAsAFaultFreeRun(t *testing.T) {
	t.Parallel()
	wantBuilt, wantDestroyed := faultLab(t, "").lifecycle(t)
	const vm = "/api2/json/nodes/pve1/qemu/101"
	calls := []struct {
		name, method, path string
		nth                int
	}{
		{"pool create", http.MethodPost, "/api2/json/pools", 1},
		{"ISO download-url", http.MethodPost, "/api2/json/nodes/pve1/storage/local/download-url", 1},
		{"cidata upload", http.MethodPost, "/api2/json/nodes/pve1/storage/local/upload", 2},
		{"VM create", http.MethodPost, "/api2/json/nodes/pve1/qemu", 2},
		{"firewall options", http.MethodPut, vm + "/firewall/options", 1},
		{"firewall rule", http.MethodPost, vm + "/firewall/rules", 3},
		{"VM start", http.MethodPost, vm + "/status/start", 1},
		{"finalize detach", http.MethodPut, vm + "/config", 1},
		{"cidata delete", http.MethodDelete, "/api2/json/nodes/pve1/storage/local/content", 2},
		{"VM stop", http.MethodPost, vm + "/status/stop", 1},
		{"VM delete", http.MethodDelete, vm, 1},
		{"pool delete", http.MethodDelete, "/api2/json/pools", 1},
	}
	for _, call := range calls {
		for _, lost := range lostAs {
			t.Run(call.name+"/"+lost.name, func(t *testing.T) {
				t.Parallel()
				f := lost.fault
				f.Service, f.Method, f.PathPrefix, f.Nth = labpx.Service, call.method, call.path, call.nth
				l := faultLab(t, "", f)
				built, destroyed := l.lifecycle(t)
				if n := l.lostCalls(); n != 1 {
					t.Errorf("%d answers lost, want 1", n)
				}
				if diff := inventory.Diff(wantBuilt, built); diff != nil {
					t.Errorf("after converge, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
				if diff := inventory.Diff(wantDestroyed, destroyed); diff != nil {
					t.Errorf("after destroy, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
			})
		}
	}
}

// The managed SDN's creates, deletes and applies, each with its answer
// lost, end in one run as a fault-free run does.
func TestLostAnswers_SDNEndsAsAFaultFreeRun(t *testing.T) {
	t.Parallel()
	network := func(t *testing.T, l *pxLab) (built, destroyed inventory.Snapshot) {
		t.Helper()
		if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
			t.Fatalf("reconcile: %v\nlog:\n%s", err, l.logs)
		}
		built = l.srv.Snapshot()
		if err := l.cloud.DestroyNetwork(t.Context(), l.cfg, &provider.Plan{}); err != nil {
			t.Fatalf("destroy: %v\nlog:\n%s", err, l.logs)
		}
		return built, l.srv.Snapshot()
	}
	wantBuilt, wantDestroyed := network(t, faultLab(t, labSDN))
	const sdn = "/api2/json/cluster/sdn"
	calls := []struct{ name, method, path string }{
		{"controller create", http.MethodPost, sdn + "/controllers"},
		{"zone create", http.MethodPost, sdn + "/zones"},
		{"vnet create", http.MethodPost, sdn + "/vnets"},
		{"subnet create", http.MethodPost, sdn + "/vnets/labsdn/subnets"},
		{"apply", http.MethodPut, sdn},
		{"subnet delete", http.MethodDelete, sdn + "/vnets/labsdn/subnets/"},
		{"zone delete", http.MethodDelete, sdn + "/zones/labsdn"},
	}
	for _, call := range calls {
		for _, lost := range lostAs {
			t.Run(call.name+"/"+lost.name, func(t *testing.T) {
				t.Parallel()
				f := lost.fault
				f.Service, f.Method, f.PathPrefix, f.Nth = labpx.Service, call.method, call.path, 1
				l := faultLab(t, labSDN, f)
				built, destroyed := network(t, l)
				if n := l.lostCalls(); n != 1 {
					t.Errorf("%d answers lost, want 1", n)
				}
				if diff := inventory.Diff(wantBuilt, built); diff != nil {
					t.Errorf("after reconcile, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
				if diff := inventory.Diff(wantDestroyed, destroyed); diff != nil {
					t.Errorf("after destroy, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
				}
			})
		}
	}
}
