package talosapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The reference's bounds of a reset (I-S13).
const (
	// ResetBudget is how long Reset waits for the reset's outcome.
	ResetBudget = 10 * time.Minute
	// ResetPoll is how often Reset checks that the node still answers.
	ResetPoll = 5 * time.Second
	// resetGoneAfter is how many checks in a row must find the node's
	// cluster API gone for the reset to count as done.
	resetGoneAfter = 3
)

// A Reset that did not succeed wraps one of these (errors.Is).
var (
	// ErrResetFailed: the call was refused or never reached the node, or
	// the reset sequence failed (the node keeps its configuration and, on
	// a control plane, maybe its etcd membership).
	ErrResetFailed = errors.New("failed")
	// ErrResetTimedOut: the node still answers after the budget, with no
	// outcome reported.
	ErrResetTimedOut = errors.New("timed out")
	// ErrResetUnknown: Reset cannot tell whether the reset happened (the
	// call's answer was lost, or the node answered only now and then).
	ErrResetUnknown = errors.New("outcome unknown")
)

// ResetOptions is one reset.
type ResetOptions struct {
	// Graceful cordons and drains the node and, on a control plane,
	// leaves etcd first.
	Graceful bool
	// Reboot reboots the wiped node (into maintenance mode, or into the
	// configuration its platform delivers) instead of shutting it down.
	Reboot bool
	// WipeSystem wipes the whole system disk (a VM); otherwise only the
	// STATE and EPHEMERAL volumes (bare metal, day2.md §4.2).
	WipeSystem bool
	// Budget and Poll bound the wait for the outcome; zero means
	// ResetBudget and ResetPoll.
	Budget, Poll time.Duration
}

// Reset resets node and waits for the outcome. Talos answers the call at
// once and runs the reset sequence asynchronously, so Reset watches the
// node's events from before the call, as `talosctl reset` does, and
// decides on the events of the call's actor:
//   - the "stopAllServices" task (the end of the API) or the sequence
//     ending in its shutdown or reboot: done;
//   - any other sequence error: ErrResetFailed with Talos's message (a
//     failed phase, e.g. an etcd leave without quorum);
//   - the node's cluster API gone for resetGoneAfter checks in a row (the
//     node shut down, or answers only in maintenance mode): done;
//   - still answering after the budget: ErrResetTimedOut.
//
// The VM scale-down reset is {Graceful: true, Reboot: false, WipeSystem:
// true} (I-S13). Reset refuses to act if it cannot watch the node's
// events first: it could not tell a failure from success.
func (c *Client) Reset(ctx context.Context, node string, o ResetOptions) error {
	if o.Budget <= 0 {
		o.Budget = ResetBudget
	}
	if o.Poll <= 0 {
		o.Poll = ResetPoll
	}
	w := &eventWatch{c: c, node: node}
	if err := w.open(ctx); err != nil {
		return fmt.Errorf("talos Reset on %s: not resetting a node whose events cannot be watched: %w", node, err)
	}
	defer w.close()
	var actor string
	err := c.call(ctx, "Reset", node, c.opts.CallTimeout, func(ctx context.Context) error {
		resp, err := c.c.ResetGenericWithResponse(ctx, resetRequest(o))
		if err != nil {
			return err
		}
		msgs := resp.GetMessages()
		if len(msgs) == 0 {
			return errors.New("empty answer")
		}
		actor = msgs[0].GetActorId()
		return nil
	})
	answer := errors.Unwrap(err) // without call's "talos Reset on …"
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil && (answerLost(err) || errors.Is(err, context.DeadlineExceeded)):
		return fmt.Errorf("talos Reset on %s: %w: the call's answer was lost, the reset may have started: %w", node, ErrResetUnknown, answer)
	case err != nil:
		return fmt.Errorf("talos Reset on %s: %w: %w", node, ErrResetFailed, answer)
	}
	return c.waitReset(ctx, node, actor, w, o)
}

// resetRequest is the API request for o: wipe mode ALL, with the listed
// volumes only when not the whole system disk (as talosctl reset
// --system-labels-to-wipe).
func resetRequest(o ResetOptions) *machineapi.ResetRequest {
	req := &machineapi.ResetRequest{Graceful: o.Graceful, Reboot: o.Reboot, Mode: machineapi.ResetRequest_ALL}
	if !o.WipeSystem {
		req.SystemPartitionsToWipe = []*machineapi.ResetPartitionSpec{
			{Label: constants.StatePartitionLabel, Wipe: true},
			{Label: constants.EphemeralPartitionLabel, Wipe: true},
		}
	}
	return req
}

// waitReset waits for the outcome of the reset of actor (see Reset).
func (c *Client) waitReset(ctx context.Context, node, actor string, w *eventWatch, o ResetOptions) error {
	bctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	end, _ := bctx.Deadline()
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	gone := 0
	var last error
	for {
		select {
		case e := <-w.events():
			if done, err := w.resetEvent(e, node, actor); done {
				return err
			}
		case <-tick.C:
			err := c.resetCheck(bctx, node, w)
			switch {
			case time.Until(end) < deadlineSlack:
				continue // cut short by the budget: it says nothing of the node
			case err != nil && unreachable(err):
				gone++
			default:
				gone = 0
			}
			last = err
			if gone >= resetGoneAfter {
				return nil
			}
		case <-bctx.Done():
			return resetGaveUp(ctx, node, o.Budget, gone, last)
		}
	}
}

// resetEvent decides the reset of actor by one event of the watch w: done
// (with the failure, if it failed) or not yet. A broken watch is closed,
// for resetCheck to reopen.
func (w *eventWatch) resetEvent(e client.EventResult, node, actor string) (done bool, err error) {
	if e.Error != nil {
		w.close()
		return false, nil
	}
	w.seen(e.Event.ID)
	switch done, failure := resetOutcome(e.Event.ActorID, e.Event.Payload, actor); {
	case failure != "":
		return true, fmt.Errorf("talos Reset on %s: %w: %s", node, ErrResetFailed, failure)
	case done:
		return true, nil
	}
	return false, nil
}

// resetGaveUp is the error of a reset wait whose budget ran out (or whose
// ctx ended): gone counts the node's unreachable answers in a row, last
// is its last answer.
func resetGaveUp(ctx context.Context, node string, budget time.Duration, gone int, last error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case gone == 0:
		return fmt.Errorf("talos Reset on %s: %w after %s: the node still answers and reported no outcome", node, ErrResetTimedOut, budget)
	default:
		return fmt.Errorf("talos Reset on %s: %w after %s: the node answered only now and then: %w", node, ErrResetUnknown, budget, last)
	}
}

// resetCheck asks whether node still answers: it reopens a broken event
// watch (from the last event seen, so nothing is missed) and asks its
// version.
func (c *Client) resetCheck(ctx context.Context, node string, w *eventWatch) error {
	if !w.up() {
		if err := w.open(ctx); err != nil {
			return err
		}
	}
	return c.call(ctx, "Version", node, c.opts.CallTimeout, func(ctx context.Context) error {
		_, err := c.version(ctx)
		return err
	})
}

// unreachable reports an error of a node whose cluster API is gone: no
// connection, no TLS handshake with the cluster's CA (a node in
// maintenance mode), no answer in time.
func unreachable(err error) bool {
	return status.Code(err) == codes.Unavailable || errors.Is(err, context.DeadlineExceeded)
}

// resetOutcome decides one event for the reset of actor: done, or failed
// with Talos's message. Talos reports a sequence that ends in its own
// shutdown or reboot as a failed one ("… unix.Reboot(4321fedc)"): that is
// a finished reset. A reset refused as "locked" is published without an
// actor.
func resetOutcome(eventActor string, payload any, actor string) (done bool, failure string) {
	switch p := payload.(type) {
	case *machineapi.TaskEvent:
		return eventActor == actor && p.GetTask() == "stopAllServices", ""
	case *machineapi.SequenceEvent:
		msg := p.GetError().GetMessage()
		if p.GetSequence() != "reset" || msg == "" || (eventActor != actor && eventActor != "") {
			return false, ""
		}
		if strings.Contains(msg, "unix.Reboot(") {
			return true, ""
		}
		return false, msg
	}
	return false, ""
}
