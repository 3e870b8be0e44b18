package proxmox_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// TestTaskWarningsAreSuccess shows how go-proxmox reports a task ending
// "WARNINGS: N": Wait returns nil, the task is successful with Warnings set,
// and its effect happened.
func TestTaskWarningsAreSuccess(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("demo-controlplane-01", "vmbr0")...))
	srv.FailTasks(proxmox.TaskFault{Type: "qmstart", ExitStatus: "WARNINGS: 1", Log: []string{"WARN: iothread is only valid with virtio disk or virtio-scsi-single controller, ignoring"}})
	task := w(node.VirtualMachineRef(100).Start(ctx))
	if !task.IsSuccessful || task.IsFailed || task.Warnings != 1 || task.ExitStatus != "WARNINGS: 1" {
		t.Errorf("task: successful %v failed %v warnings %d exit %q", task.IsSuccessful, task.IsFailed, task.Warnings, task.ExitStatus)
	}
	if info, _ := srv.VM(100); !info.Running {
		t.Error("a task with warnings did not take effect")
	}
	log, err := task.Log(ctx, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(log); n < 2 || log[n-1] != "TASK WARNINGS: 1" || !strings.HasPrefix(log[n-2], "WARN: ") {
		t.Errorf("log = %v", log)
	}
}

func TestTaskFailuresAndHangs(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")

	// The second create fails (Nth); the first and third succeed.
	srv.FailTasks(proxmox.TaskFault{Type: "qmcreate", Nth: 2, ExitStatus: "unable to create VM 101 - lvcreate 'pve/vm-101-disk-0' error: out of space"})
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("a", "vmbr0")...))
	task, err := node.NewVirtualMachine(ctx, 101, talosVMOptions("b", "vmbr0")...)
	if err != nil {
		t.Fatal(err)
	}
	err = task.Wait(ctx, 2*time.Millisecond, 5*time.Second)
	var tfe *goproxmox.TaskFailedError
	if !errors.As(err, &tfe) || tfe.Type != "qmcreate" || tfe.ID != "101" || !strings.Contains(tfe.ExitStatus, "out of space") {
		t.Errorf("failed create: err = %v", err)
	}
	if _, ok := srv.VM(101); ok {
		t.Error("a failed create left VM 101")
	}
	w(node.NewVirtualMachine(ctx, 102, talosVMOptions("c", "vmbr0")...))

	// A start that fails leaves the VM stopped.
	srv.FailTasks(proxmox.TaskFault{Type: "qmstart", ID: "100", ExitStatus: "start failed: QEMU exited with code 1"})
	task, err = node.VirtualMachineRef(100).Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); !goproxmox.IsTaskFailed(err) || !strings.HasSuffix(err.Error(), "start failed: QEMU exited with code 1") {
		t.Errorf("failed start: err = %v", err)
	}
	if info, _ := srv.VM(100); info.Running {
		t.Error("VM runs after a failed start")
	}

	// A hanging shutdown: the caller's bound expires; stopping the task
	// ends it.
	srv.ClearTaskFaults()
	w(node.VirtualMachineRef(102).Start(ctx))
	srv.FailTasks(proxmox.TaskFault{Type: "qmshutdown", Hang: true})
	task, err = node.VirtualMachineRef(102).Shutdown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 50*time.Millisecond); !errors.Is(err, goproxmox.ErrTimeout) {
		t.Errorf("hanging shutdown: err = %v, want ErrTimeout", err)
	}
	if err := task.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := task.Ping(ctx); err != nil || !task.IsFailed || task.ExitStatus != "interrupted by signal" {
		t.Errorf("stopped task: failed %v exit %q (%v)", task.IsFailed, task.ExitStatus, err)
	}

	// The node's task index lists finished tasks with their exit status,
	// newest first, filtered like PVE.
	hist, err := node.Tasks(ctx, &goproxmox.NodeTasksOptions{TypeFilter: "qmcreate", Source: "all", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hist {
		ids = append(ids, h.ID+"="+h.Status)
	}
	if len(ids) != 3 || ids[0] != "102=OK" || !strings.HasPrefix(ids[1], "101=unable to create VM 101") || ids[2] != "100=OK" {
		t.Errorf("task index = %v", ids)
	}
	// An unknown UPID is PVE's 400 "no such task".
	var out any
	err = c.Get(ctx, "/nodes/pve1/tasks/UPID:pve1:00000001:00000001:00000001:qmstart:1:root@pam:/status", &out)
	if !goproxmox.IsBadRequest(err) || !strings.Contains(err.Error(), "no such task") {
		t.Errorf("unknown UPID: err = %v", err)
	}
	all := srv.Tasks()
	if !slices.ContainsFunc(all, func(ti proxmox.TaskInfo) bool {
		return ti.Type == "qmshutdown" && ti.ExitStatus == "interrupted by signal"
	}) {
		t.Errorf("inspection misses the stopped task: %+v", all)
	}
}

func TestTaskDurationsAreConfigurable(t *testing.T) {
	t.Parallel()
	srv, c, _ := vmLab(t)
	ctx, w := t.Context(), waiter(t)
	node := c.NodeRef("pve1")
	w(node.NewVirtualMachine(ctx, 100, talosVMOptions("a", "vmbr0")...))
	srv.SetTaskDuration("qmstart", 60*time.Millisecond)
	start := time.Now()
	task := w(node.VirtualMachineRef(100).Start(ctx))
	if d := time.Since(start); d < 60*time.Millisecond || task.Duration < 0 {
		t.Errorf("qmstart took %v, want >= 60ms", d)
	}
	srv.SetTaskDuration("qmstop", 0)
	task, err := node.VirtualMachineRef(100).Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A zero duration finishes the task within the API call.
	if err := task.Ping(ctx); err != nil || !task.IsCompleted {
		t.Errorf("instant task still running (%v)", err)
	}
}
