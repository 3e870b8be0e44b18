package talosapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// ApplyResult is a node's answer to ApplyConfiguration.
type ApplyResult struct {
	// Reboot reports that the node answered mode REBOOT: only Talos ≤
	// 1.13 does, for a change its CanApplyImmediate rule refuses (Talos
	// 1.14 applies everything live, day2.md §3). The configuration is
	// persisted and the node is rebooting into it: settle the apply with
	// WaitRebooted(BootID). In a dry run: the apply would reboot the node.
	Reboot bool
	// Mode is the mode the node chose ("NO_REBOOT", "REBOOT", …).
	Mode string
	// Details are Talos's words for it; in a dry run its summary and the
	// configuration diff, which may hold the cluster's secrets: redact it
	// before showing it.
	Details string
	// BootID is the node's boot id before the apply ("" in a dry run):
	// the previousBootID of WaitRebooted.
	BootID string
}

// Talos's answers an apply is decided on (machined's v1alpha1 server).
const (
	answerRebooting  = "configuration was already applied and node is rebooting"
	answerInProgress = "another apply configuration is already in progress"
)

// mayBeApplied qualifies an apply error whose answer was lost.
const mayBeApplied = "an answer was lost: the configuration may be applied and the node rebooting"

// ApplyConfiguration applies the machine configuration data to node in
// mode AUTO, the only mode that is right on every Talos: 1.14 applies it
// live, 1.13 live or, for a change it cannot apply immediately, with a
// reboot (mode REBOOT, the proto's zero value, is never sent: 1.14 refuses
// it). A dry run only asks what the node would do, with its diff.
//
// Applying the same configuration twice is harmless, so an apply answered
// Unavailable (or "another apply … in progress") is tried again, up to
// readAttempts times. An answer lost after the node may have acted on it
// (a broken connection, DeadlineExceeded from apid or a proxy, our own
// call timing out) must neither read as a failure nor be repeated
// blindly, so BootID is read first, and from then on the apply is asked
// again, for as long as an install may take, until the node answers:
// a 1.13 node's "configuration was already applied and node is
// rebooting", or a boot id that changed meanwhile, is the first attempt's
// reboot (Reboot true). The same refusal with no earlier attempt in doubt
// is someone else's apply and an error.
func (c *Client) ApplyConfiguration(ctx context.Context, node string, data []byte, dryRun bool) (ApplyResult, error) {
	if dryRun {
		return c.applyDryRun(ctx, node, data)
	}
	before, err := c.BootID(ctx, node)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("talos ApplyConfiguration on %s: not applying without the boot id to settle it by: %w", node, err)
	}
	inDoubt, start := false, time.Now()
	for attempt := 1; ; attempt++ {
		var res ApplyResult
		err := c.call(ctx, "ApplyConfiguration", node, c.opts.CallTimeout, func(ctx context.Context) (err error) {
			res, err = c.apply(ctx, data, false)
			return err
		})
		res.BootID = before
		switch applyStep(err, inDoubt) {
		case applyDone:
			if inDoubt && !res.Reboot {
				return c.settleInDoubt(ctx, node, res)
			}
			return res, nil
		case applyRebooted:
			return ApplyResult{Reboot: true, Mode: machineapi.ApplyConfigurationRequest_REBOOT.String(), Details: nodeStatus(err).Message(), BootID: before}, nil //nolint:staticcheck // the mode Talos ≤ 1.13 answers with
		case applyFailed:
			return ApplyResult{}, mayBeAppliedIf(inDoubt || errors.Is(err, context.DeadlineExceeded), err)
		case applyRetry:
			inDoubt = inDoubt || answerLost(err) || errors.Is(err, context.DeadlineExceeded)
			if !c.applyAgain(ctx, attempt, inDoubt, start) {
				return ApplyResult{}, mayBeAppliedIf(inDoubt, err)
			}
		}
	}
}

// applyDryRun asks node what applying data would do, with its diff.
func (c *Client) applyDryRun(ctx context.Context, node string, data []byte) (ApplyResult, error) {
	var res ApplyResult
	err := c.read(ctx, "ApplyConfiguration (dry run)", node, func(ctx context.Context) (err error) {
		res, err = c.apply(ctx, data, true)
		return err
	})
	return res, err
}

// applyAgain waits before the next apply attempt and reports whether to
// make it: up to readAttempts attempts, or, once an answer is in doubt,
// for as long as an install may take since start.
func (c *Client) applyAgain(ctx context.Context, attempt int, inDoubt bool, start time.Time) bool {
	spent := !inDoubt && attempt == readAttempts || inDoubt && time.Since(start) > c.opts.InstallTimeout
	return !spent && ctxwait.Sleep(ctx, c.opts.RetryInterval) == nil
}

// mayBeAppliedIf qualifies err, when inDoubt, as an apply that may have
// been applied though its answer was lost.
func mayBeAppliedIf(inDoubt bool, err error) error {
	if inDoubt {
		return fmt.Errorf("%w (%s)", err, mayBeApplied)
	}
	return err
}

// apply is one ApplyConfiguration RPC in mode AUTO.
func (c *Client) apply(ctx context.Context, data []byte, dryRun bool) (ApplyResult, error) {
	resp, err := c.c.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{
		Data: data, Mode: machineapi.ApplyConfigurationRequest_AUTO, DryRun: dryRun,
	})
	if err != nil {
		return ApplyResult{}, err
	}
	msgs := resp.GetMessages()
	if len(msgs) == 0 {
		return ApplyResult{}, errors.New("empty answer")
	}
	mode := msgs[0].GetMode()
	return ApplyResult{
		Reboot:  mode == machineapi.ApplyConfigurationRequest_REBOOT, //nolint:staticcheck // the mode Talos ≤ 1.13 answers with
		Mode:    mode.String(),
		Details: msgs[0].GetModeDetails(),
	}, nil
}

// settleInDoubt decides an apply that succeeded after an earlier attempt's
// answer was lost: if the boot id changed meanwhile, that attempt rebooted
// the node (a 1.13 node back with the configuration answers NO_REBOOT to
// the retry).
func (c *Client) settleInDoubt(ctx context.Context, node string, res ApplyResult) (ApplyResult, error) {
	now, err := c.BootID(ctx, node)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("applied after a lost answer, but cannot tell whether the node rebooted meanwhile: %w", err)
	}
	if now != res.BootID {
		res.Reboot = true
		res.Mode = machineapi.ApplyConfigurationRequest_REBOOT.String() //nolint:staticcheck // what the lost answer said
		res.Details = "an earlier answer was lost and the node rebooted since (boot id changed); then: " + res.Details
	}
	return res, nil
}

// step is what an apply attempt's outcome calls for.
type step int

const (
	applyDone step = iota
	applyRebooted
	applyRetry
	applyFailed
)

// applyStep decides an apply attempt's error; inDoubt reports an earlier
// attempt whose answer was lost.
func applyStep(err error, inDoubt bool) step {
	if err == nil {
		return applyDone
	}
	st := nodeStatus(err)
	switch {
	case st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), answerRebooting):
		if inDoubt {
			return applyRebooted
		}
		return applyFailed
	case st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), answerInProgress),
		st.Code() == codes.Unavailable, st.Code() == codes.DeadlineExceeded, errors.Is(err, context.DeadlineExceeded):
		return applyRetry
	}
	return applyFailed
}

// answerLost reports an error after the call may have reached the node:
// Unavailable once the connection broke (a failed dial never sent it), or
// DeadlineExceeded, which apid or a proxy answers for a node that took the
// call and did not answer in time.
func answerLost(err error) bool {
	switch status.Code(err) { //nolint:exhaustive // everything else is an answer
	case codes.Unavailable:
		return !strings.Contains(err.Error(), "while dialing")
	case codes.DeadlineExceeded:
		return true
	}
	return false
}

// nodeStatus is the gRPC status the node answered with, under the
// wrapping that names the call (status.FromError would put the wrapping
// into its message).
func nodeStatus(err error) *status.Status {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		return gs.GRPCStatus()
	}
	return status.New(codes.Unknown, err.Error())
}
