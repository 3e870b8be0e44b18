package proxmox_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

func TestReconcileMachines_SizingDriftPendingUntilRestart(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	inv := l.inventory(t)
	if got, err := l.cloud.PendingRestart(t.Context(), inv); err != nil || len(got) != 0 {
		t.Fatalf("pending after create: %v, %v", got, err)
	}

	// Workers grow in every way; control planes get more cores.
	l.cfg.Workers[0].Cores, l.cfg.Workers[0].Memory, l.cfg.Workers[0].Disk = 4, 8, 40
	l.cfg.ControlPlane.Cores = 4
	l.srv.Recorder().Reset()
	dry := &provider.Plan{DryRun: true}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, dry); err != nil {
		t.Fatal(err)
	}
	all := []string{"c-controlplane-01", "c-controlplane-02", "c-controlplane-03", "c-worker-01", "c-worker-02"}
	if got, err := l.cloud.PendingRestart(t.Context(), inv); err != nil || !slices.Equal(got, all) {
		t.Errorf("pending in the plan: %v, %v", got, err)
	}
	l.noMutations(t)
	plan := &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	got := summary(plan.Changes())
	if want := summary(dry.Changes()); !slices.Equal(got, want) {
		t.Errorf("changes\n%s\nwant the dry run's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	want := []string{
		"update proxmox:vm c-controlplane-01 (cores 2 -> 4 (at next restart))",
		"update proxmox:vm c-controlplane-02 (cores 2 -> 4 (at next restart))",
		"update proxmox:vm c-controlplane-03 (cores 2 -> 4 (at next restart))",
		"update proxmox:vm c-worker-01 (cores 2 -> 4 (at next restart), memory 4 GB -> 8 GB (at next restart), disk 20 -> 40 GB (at next restart))",
		"update proxmox:vm c-worker-02 (cores 2 -> 4 (at next restart), memory 4 GB -> 8 GB (at next restart), disk 20 -> 40 GB (at next restart))",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var resizes, puts int
	for _, c := range l.srv.Recorder().Mutations() {
		switch {
		case c.Method == http.MethodPut && strings.HasSuffix(c.Path, "/resize"):
			resizes++
		case c.Method == http.MethodPut && strings.HasSuffix(c.Path, "/config"):
			puts++
		default:
			t.Errorf("unexpected mutation %s %s", c.Method, c.Path)
		}
	}
	if resizes != 2 || puts != 5 {
		t.Errorf("%d resizes and %d config PUTs, want 2 and 5", resizes, puts)
	}
	for _, m := range machines {
		vm, _ := l.srv.VM(vmid(t, m))
		if vm.Pending["cores"] != "4" || vm.Config["cores"] != "2" {
			t.Errorf("%s cores: running %q, pending %q", m.Hostname, vm.Config["cores"], vm.Pending["cores"])
		}
		worker := strings.Contains(m.Hostname, "worker")
		if tagged := strings.Contains(vm.Config["tags"], proxmox.TagPendingResize); tagged != worker {
			t.Errorf("%s tags %q", m.Hostname, vm.Config["tags"])
		}
		if worker && (vm.Pending["memory"] != "8192" || !strings.Contains(vm.Config["scsi0"], "size=40G")) {
			t.Errorf("%s memory pending %q, scsi0 %q", m.Hostname, vm.Pending["memory"], vm.Config["scsi0"])
		}
	}

	// Converged: nothing to do, but every VM still waits for its restart.
	inv = l.inventory(t)
	if len(inv.Machines) != 5 {
		t.Fatalf("inventory with the pending tag: %v", inv.Hostnames())
	}
	l.srv.Recorder().Reset()
	plan = &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, plan); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if len(plan.Changes()) != 0 {
		t.Errorf("re-run changes %v", summary(plan.Changes()))
	}
	pending, err := l.cloud.PendingRestart(t.Context(), inv)
	if err != nil || !slices.Equal(pending, all) {
		t.Errorf("pending: %v, %v", pending, err)
	}
	l.noMutations(t)

	// A dry-run restart only plans; a real one applies and clears.
	w1, _ := inv.Find("c-worker-01")
	l.restart(t, w1)
	vm, _ := l.srv.VM(vmid(t, w1))
	if !vm.Running || len(vm.Pending) != 0 || vm.Config["cores"] != "4" || vm.Config["memory"] != "8192" || strings.Contains(vm.Config["tags"], proxmox.TagPendingResize) {
		t.Errorf("after restart: running %v, pending %v, config cores %q memory %q tags %q", vm.Running, vm.Pending, vm.Config["cores"], vm.Config["memory"], vm.Config["tags"])
	}
	var reboots int
	for _, c := range l.srv.Recorder().Mutations() {
		if strings.HasSuffix(c.Path, "/status/reboot") {
			reboots++
		}
	}
	if reboots != 1 {
		t.Errorf("%d reboot calls, want 1", reboots)
	}
	pending, err = l.cloud.PendingRestart(t.Context(), l.inventory(t))
	if err != nil || !slices.Equal(pending, slices.DeleteFunc(slices.Clone(all), func(h string) bool { return h == "c-worker-01" })) {
		t.Errorf("pending after one restart: %v, %v", pending, err)
	}

	// A stopped VM's start applies its sizing: it loses the tag.
	w2, _ := inv.Find("c-worker-02")
	l.post(t, "/nodes/"+w2.Zone+"/qemu/"+w2.ID+"/status/stop", nil)
	plan = &provider.Plan{}
	if err := l.cloud.ReconcileMachines(t.Context(), l.inventory(t), plan); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(plan.Changes()), []string{
		"update proxmox:vm c-worker-02 (disk resize applied at start)",
		"update proxmox:vm c-worker-02 (start the stopped VM)",
	}; !slices.Equal(got, want) {
		t.Errorf("changes of the stopped VM %v, want %v", got, want)
	}
	if vm, _ := l.srv.VM(vmid(t, w2)); len(vm.Pending) != 0 || vm.Config["memory"] != "8192" || strings.Contains(vm.Config["tags"], proxmox.TagPendingResize) {
		t.Errorf("started VM: pending %v, memory %q, tags %q", vm.Pending, vm.Config["memory"], vm.Config["tags"])
	}
	pending, err = l.cloud.PendingRestart(t.Context(), l.inventory(t))
	if err != nil || !slices.Equal(pending, all[:3]) {
		t.Errorf("pending after the start: %v, %v", pending, err)
	}

	// Shrinking the disk stays refused.
	l.cfg.Workers[0].Disk = 30
	if err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), l.inventory(t)); err == nil || !strings.Contains(err.Error(), "workers.worker.disk changed from 40 to 30") {
		t.Errorf("shrink: %v", err)
	}
}
