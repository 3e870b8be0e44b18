package nodes_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider/proxmox"
	"github.com/talosc/talosc/pkg/state"
)

// newProxmoxLabDir is a cluster directory on a lab Proxmox VE of one
// control plane and one worker.
func newProxmoxLabDir(t *testing.T) *labDir {
	t.Helper()
	d := startLabDir(t, lab.Options{
		Provider:    lab.ProviderProxmox,
		ClusterCIDR: "127.21.90.0/24", // its own bridge: other Proxmox labs may run beside it
	}, "rb")
	d.edit(t, "controlplane: {count: 3,", "controlplane: {count: 1,")
	d.edit(t, "worker: {count: 2,", "worker: {count: 1,")
	return d
}

// vmChanges are the proxmox:vm changes of a section, summarised.
func vmChanges(sec state.Section) []string {
	var out []string
	for _, c := range sec.Plan {
		if c.Kind == proxmox.KindVM {
			out = append(out, fmt.Sprintf("%s %s (%s)", c.Action, c.Name, c.Detail))
		}
	}
	return out
}

// TestSizingDriftThenReboot: growing both pools updates the VMs in place
// and warns that they need a restart; plan --reboot lists the restarts,
// control plane first; converge --reboot restarts the control plane, waits
// for it to be healthy, then the worker, and nothing is pending after.
func TestSizingDriftThenReboot(t *testing.T) {
	d := newProxmoxLabDir(t)
	if _, stderr, err := d.runReboot(t, phase.ActionConverge, false); err != nil {
		t.Fatalf("first converge: %v\n%s", err, stderr)
	}
	d.edit(t, "controlplane: {count: 1, cores: 2,", "controlplane: {count: 1, cores: 4,")
	d.edit(t, "worker: {count: 1, cores: 2, memory: 4, disk: 20}", "worker: {count: 1, cores: 2, memory: 8, disk: 30}")

	sec, stderr, err := d.runReboot(t, phase.ActionPlan, true)
	if err != nil {
		t.Fatalf("plan --reboot: %v\n%s", err, stderr)
	}
	sizing := []string{
		"update rb-controlplane-01 (cores 2 -> 4 (at next restart))",
		"update rb-worker-01 (memory 4 GB -> 8 GB (at next restart), disk 20 -> 30 GB (at next restart))",
	}
	cpRestart := "update rb-controlplane-01 (restart to apply pending sizing / NIC MTU)"
	workerRestart := "update rb-worker-01 (restart to apply pending sizing / NIC MTU)"
	// provider.Plan.Changes sorts each run of one action and kind by name.
	if got, want := vmChanges(sec), []string{sizing[0], cpRestart, sizing[1], workerRestart}; !slices.Equal(got, want) {
		t.Errorf("plan --reboot changes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(stderr, "need a restart") {
		t.Errorf("plan --reboot warns:\n%s", stderr)
	}

	sec, stderr, err = d.runReboot(t, phase.ActionConverge, false)
	if err != nil {
		t.Fatalf("converge: %v\n%s", err, stderr)
	}
	if got := vmChanges(sec); !slices.Equal(got, sizing) {
		t.Errorf("converge changes %v, want %v", got, sizing)
	}
	if w := "2 node(s) need a restart to pick up pending sizing or NIC changes: rb-controlplane-01, rb-worker-01 -- rerun with converge --reboot"; !strings.Contains(stderr, w) {
		t.Errorf("no restart warning %q:\n%s", w, stderr)
	}
	for _, c := range d.lab.Recorder().Mutations() {
		if strings.Contains(c.Path, "/status/") {
			t.Errorf("converge without --reboot made %s %s", c.Method, c.Path)
		}
	}

	sec, stderr, err = d.runReboot(t, phase.ActionPlan, false)
	if err != nil || len(vmChanges(sec)) != 0 || !strings.Contains(stderr, "2 node(s) need a restart") {
		t.Errorf("plan after converge: %v, changes %v\n%s", err, vmChanges(sec), stderr)
	}

	sec, stderr, err = d.runReboot(t, phase.ActionConverge, true)
	if err != nil {
		t.Fatalf("converge --reboot: %v\n%s", err, stderr)
	}
	if got := vmChanges(sec); !slices.Equal(got, []string{cpRestart, workerRestart}) {
		t.Errorf("converge --reboot changes %v, want the control plane's restart, then the worker's", got)
	}
	var reboots []string
	for _, c := range d.lab.Recorder().Mutations() {
		if strings.HasSuffix(c.Path, "/status/reboot") {
			reboots = append(reboots, c.Path)
		}
	}
	if len(reboots) != 2 {
		t.Errorf("reboot calls %v, want 2, one per node", reboots)
	}
	for _, vm := range d.lab.Proxmox.VMs() {
		if len(vm.Pending) != 0 || strings.Contains(vm.Config["tags"], proxmox.TagPendingResize) {
			t.Errorf("%s after the rollout: pending %v, tags %q", vm.Name, vm.Pending, vm.Config["tags"])
		}
	}
	sec, stderr, err = d.runReboot(t, phase.ActionPlan, true)
	if err != nil || len(vmChanges(sec)) != 0 || strings.Contains(stderr, "need a restart") {
		t.Errorf("plan --reboot after the rollout: %v, changes %v\n%s", err, vmChanges(sec), stderr)
	}

	// The health barrier: a control plane that does not come back from its
	// restart stops the rollout before the worker is touched.
	d.edit(t, "controlplane: {count: 1, cores: 4,", "controlplane: {count: 1, cores: 6,")
	d.edit(t, "worker: {count: 1, cores: 2,", "worker: {count: 1, cores: 4,")
	if _, stderr, err := d.runReboot(t, phase.ActionConverge, false); err != nil {
		t.Fatalf("converge (sizing): %v\n%s", err, stderr)
	}
	setKnobs(t, d.lab, "rb-controlplane-01", `{"neverBoots": true}`)
	_, stderr, err = d.runReboot(t, phase.ActionConverge, true)
	if w := "cluster unhealthy after rebooting rb-controlplane-01; stopping the rollout"; err == nil || !strings.Contains(err.Error(), w) {
		t.Fatalf("converge --reboot with a control plane that never comes back: %v, want %q\n%s", err, w, stderr)
	}
	for _, c := range d.lab.Recorder().Mutations() {
		if strings.HasSuffix(c.Path, "/status/reboot") && strings.Contains(c.Path, workerVMID(t, d.lab)) {
			t.Errorf("the worker was restarted after the control plane failed: %s", c.Path)
		}
	}
}

// setKnobs sets a lab Talos node's fault knobs through the lab's control
// API, finding the node by hostname.
func setKnobs(t *testing.T, l *lab.Lab, hostname, knobs string) {
	t.Helper()
	h := l.ControlHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/nodes", nil))
	var nodes []struct {
		Address, Hostname string
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &nodes); err != nil {
		t.Fatalf("GET /nodes: %v: %s", err, rec.Body)
	}
	for _, n := range nodes {
		if n.Hostname == hostname {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPut, "/nodes/"+n.Address+"/knobs", strings.NewReader(knobs)))
			if rec.Code != http.StatusNoContent {
				t.Fatalf("PUT knobs of %s: %d %s", hostname, rec.Code, rec.Body)
			}
			return
		}
	}
	t.Fatalf("no lab node %s in %s", hostname, rec.Body)
}

// workerVMID is the worker VM's id as it appears in API paths ("/qemu/101/").
func workerVMID(t *testing.T, l *lab.Lab) string {
	t.Helper()
	for _, vm := range l.Proxmox.VMs() {
		if strings.Contains(vm.Name, "worker") {
			return fmt.Sprintf("/qemu/%d/", vm.VMID)
		}
	}
	t.Fatal("no worker VM")
	return ""
}
