package proxmox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
)

// uncertain reports a failure after which a mutating request may or may
// not have been applied: a gateway's 502 or 504, a connection reset or
// closed before the answer, or an attempt that timed out while the
// caller's context is still alive.
func uncertain(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if apiErr, ok := errors.AsType[*goproxmox.APIError](err); ok {
		return apiErr.StatusCode == http.StatusBadGateway || apiErr.StatusCode == http.StatusGatewayTimeout
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.EPIPE)
}

// retryable reports a failure worth another attempt once the request is
// known not to have been applied: an uncertain one, a 503 or a refused
// connection.
func retryable(ctx context.Context, err error) bool {
	if apiErr, ok := errors.AsType[*goproxmox.APIError](err); ok && apiErr.StatusCode == http.StatusServiceUnavailable {
		return ctx.Err() == nil
	}
	return uncertain(ctx, err) || (ctx.Err() == nil && errors.Is(err, syscall.ECONNREFUSED))
}

// errUnsettled marks a failure after which whether the call was applied
// is unknown: the look that should have told failed or was cut short.
var errUnsettled = errors.New("whether it was applied is unknown")

// settle runs send, a mutating call that is not idempotent or whose task
// id a lost answer hides, so that a lost answer neither repeats it nor
// reads as a failure: after any failure applied finds out from the
// cloud's state whether the call took effect (true ends it as a success;
// an error refuses, e.g. an object of that id that is not talosc's); a
// call proven not applied is sent again when its failure was transient.
// After a failure whose outcome is uncertain, "not applied" counts only
// once lookLate has looked for the request's late window. what names
// the call in the log; the error returned is send's (wrapping
// errUnsettled when applied could not tell).
func (c *Cloud) settle(ctx context.Context, what string, send func(context.Context) error, applied func(context.Context) (bool, error)) error {
	for attempt := 0; ; attempt++ {
		err := send(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		ok, aerr := c.lookLate(ctx, err, applied)
		switch {
		case aerr != nil:
			return fmt.Errorf("%w; %w: %w", err, errUnsettled, aerr)
		case ok:
			c.opts.Logf("proxmox: %s: %v; it was applied, going on", what, err)
			return nil
		case attempt == retries || !retryable(ctx, err):
			return err
		}
		c.opts.Logf("proxmox: %s: %v; retrying (%d of %d)", what, err, attempt+1, retries)
		if err := ctxwait.Sleep(ctx, time.Duration(250<<attempt)*time.Millisecond); err != nil {
			return err
		}
	}
}

// lookLate asks applied whether a call that failed with err took effect.
// A call refused or never sent (a 503, a refused connection, an answer)
// is asked about once. One whose outcome is uncertain (a 502, a 504, a
// reset, a timed-out attempt) may still be applied after the client gave
// up: pveproxy hands a queued request to a pvedaemon worker, which
// starts its task, seconds later. So "not applied" counts only once
// applied has said so for provider.LateWindow(the request timeout)
// (provider.AwaitLate; seam.go, "A late create"); applied itself waits
// for the running tasks that could have made it (awaitTasks).
func (c *Cloud) lookLate(ctx context.Context, err error, applied func(context.Context) (bool, error)) (bool, error) {
	window := time.Duration(0)
	if uncertain(ctx, err) {
		window = provider.LateWindow(c.opts.RequestTimeout)
	}
	found, err := provider.AwaitLate(ctx, window, func(ctx context.Context) ([]struct{}, error) {
		ok, err := applied(ctx)
		if !ok {
			return nil, err
		}
		return []struct{}{{}}, err
	})
	return len(found) > 0, err
}

// activeTask is a running task as GET nodes/<node>/tasks lists it.
type activeTask struct {
	UPID goproxmox.UPID `json:"upid"`
	ID   string         `json:"id"`
}

// awaitTasks waits for the running tasks of type typ on node whose id is
// id (a VMID, a file name; "" for any, as an upload's "imgcopy" task has
// none): the tasks a request whose answer was lost may have started. The
// task index takes only a VMID as its vmid filter, so other ids are
// matched here.
func (c *Cloud) awaitTasks(ctx context.Context, node, typ, id string) error {
	q := url.Values{"typefilter": {typ}, "source": {"active"}}
	if _, err := strconv.Atoi(id); err == nil {
		q.Set("vmid", id)
	}
	var tasks []activeTask
	if err := c.client.Get(ctx, "/nodes/"+url.PathEscape(node)+"/tasks?"+q.Encode(), &tasks); err != nil {
		return fmt.Errorf("list the running %s tasks of %s on %s: %w", typ, id, node, err)
	}
	for _, t := range tasks {
		if id != "" && t.ID != id {
			continue
		}
		// Its outcome is read from the state afterwards; only its end counts.
		if err := goproxmox.NewTask(t.UPID, c.client).Wait(ctx, c.opts.Poll, c.opts.TaskTimeout); err != nil && !goproxmox.IsTaskFailed(err) {
			return fmt.Errorf("wait for task %s: %w", t.UPID, err)
		}
	}
	return nil
}
