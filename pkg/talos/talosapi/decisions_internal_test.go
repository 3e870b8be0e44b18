package talosapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestApplyStep(t *testing.T) {
	t.Parallel()
	rebooting := status.Error(codes.FailedPrecondition, "configuration was already applied and node is rebooting, cannot apply more configuration changes until next reboot")
	wrapped := func(err error) error { return fmt.Errorf("talos ApplyConfiguration on 127.0.0.1: %w", err) }
	for _, tc := range []struct {
		name    string
		err     error
		inDoubt bool
		want    step
	}{
		{"answered", nil, false, applyDone},
		{"answered after a lost answer", nil, true, applyDone},
		{"rebooting after our lost answer", wrapped(rebooting), true, applyRebooted},
		{"rebooting into someone else's apply", wrapped(rebooting), false, applyFailed},
		{"another apply in progress", wrapped(status.Error(codes.FailedPrecondition, "another apply configuration is already in progress")), false, applyRetry},
		{"unreachable", wrapped(status.Error(codes.Unavailable, "connection reset by peer")), false, applyRetry},
		{"invalid", wrapped(status.Error(codes.InvalidArgument, "unknown keys found")), true, applyFailed},
		{"REBOOT refused", wrapped(status.Error(codes.Unimplemented, "the REBOOT mode is not supported")), false, applyFailed},
		{"our call timed out", wrapped(&timeoutError{after: 30}), false, applyRetry},
		{"apid's deadline passed", wrapped(status.Error(codes.DeadlineExceeded, "context deadline exceeded")), false, applyRetry},
	} {
		if got := applyStep(tc.err, tc.inDoubt); got != tc.want {
			t.Errorf("%s: applyStep = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestAnswerLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		lost bool
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:50000: connect: connection refused"`), false},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), true},
		{fmt.Errorf("talos ApplyConfiguration on x: %w", status.Error(codes.Unavailable, "transport is closing")), true},
		{status.Error(codes.InvalidArgument, "bad"), false},
		{errors.New("plain"), false},
	} {
		if got := answerLost(tc.err); got != tc.lost {
			t.Errorf("answerLost(%v) = %t", tc.err, got)
		}
	}
}

func TestResetOutcome(t *testing.T) {
	t.Parallel()
	const actor = "a1"
	seqErr := func(code common.Code, msg string) *machineapi.SequenceEvent {
		return &machineapi.SequenceEvent{Sequence: "reset", Action: machineapi.SequenceEvent_NOOP, Error: &common.Error{Code: code, Message: msg}}
	}
	for _, tc := range []struct {
		name    string
		actor   string
		payload any
		done    bool
		failure string
	}{
		{"services stop", actor, &machineapi.TaskEvent{Task: "stopAllServices", Action: machineapi.TaskEvent_START}, true, ""},
		{"another actor's services stop", "b2", &machineapi.TaskEvent{Task: "stopAllServices"}, false, ""},
		{"other task", actor, &machineapi.TaskEvent{Task: "leaveEtcd"}, false, ""},
		{"start", actor, &machineapi.SequenceEvent{Sequence: "reset", Action: machineapi.SequenceEvent_START}, false, ""},
		{"failed phase", actor, seqErr(common.Code_FATAL, "sequence failed: error running phase 4 in reset sequence: task 1/1: failed, etcdserver: no leader"), false, "sequence failed: error running phase 4 in reset sequence: task 1/1: failed, etcdserver: no leader"},
		{"ended in its shutdown", actor, seqErr(common.Code_FATAL, "sequence failed: error running phase 12 in reset sequence: task 1/1: failed, unix.Reboot(4321fedc)"), true, ""},
		{"locked, published without actor", "", seqErr(common.Code_LOCKED, "sequence not started: locked"), false, "sequence not started: locked"},
		{"another actor's failure", "b2", seqErr(common.Code_FATAL, "sequence failed: x"), false, ""},
		{"another sequence's failure", actor, &machineapi.SequenceEvent{Sequence: "reboot", Error: &common.Error{Message: "x"}}, false, ""},
		{"machine status", actor, &machineapi.MachineStatusEvent{Stage: machineapi.MachineStatusEvent_RESETTING}, false, ""},
	} {
		done, failure := resetOutcome(tc.actor, tc.payload, actor)
		if done != tc.done || failure != tc.failure {
			t.Errorf("%s: resetOutcome = %t, %q; want %t, %q", tc.name, done, failure, tc.done, tc.failure)
		}
	}
}

func TestResetRequest(t *testing.T) {
	t.Parallel()
	vm := resetRequest(ResetOptions{Graceful: true, WipeSystem: true})
	if !vm.GetGraceful() || vm.GetReboot() || vm.GetMode() != machineapi.ResetRequest_ALL || len(vm.GetSystemPartitionsToWipe()) != 0 {
		t.Errorf("VM reset request %v, want graceful, no reboot, the whole system disk", vm)
	}
	metal := resetRequest(ResetOptions{Graceful: true, Reboot: true})
	var labels []string
	for _, p := range metal.GetSystemPartitionsToWipe() {
		if p.GetWipe() {
			labels = append(labels, p.GetLabel())
		}
	}
	if !metal.GetReboot() || fmt.Sprint(labels) != "[STATE EPHEMERAL]" {
		t.Errorf("metal reset request %v, want STATE and EPHEMERAL wiped", metal)
	}
}
