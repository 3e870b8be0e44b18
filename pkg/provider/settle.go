package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// LateWindow is how long after a create whose outcome is unknown the
// service may still apply it, for a request whose attempts were bounded by
// requestTimeout (see seam.go, "A late create"). A service that was still
// working on the request when the client gave up (nova-api, neutron-server
// and pveproxy behind a busy worker pool, a Proxmox task queue) has been
// given the request at most one attempt ago and finishes it within its
// own bound, which is of the order of the client's: the window is that
// bound once more, and at least MinLateWindow.
func LateWindow(requestTimeout time.Duration) time.Duration {
	return max(requestTimeout, MinLateWindow)
}

// MinLateWindow is the least a late create is waited for, however short
// the request timeout (a test's time scale): a busy API applies a request
// seconds after its client gave up.
const MinLateWindow = 10 * time.Second

// latePoll is the longest pause between two looks for a late create.
const latePoll = 2 * time.Second

// AwaitLate looks for what a create whose outcome is unknown would have
// made: find is asked at once and then, while it finds nothing, with a
// growing pause (ctxwait.Backoff, up to 2 s) until window has passed. It
// returns find's first non-empty answer, or an empty one once the window
// has passed; "not found" earlier is not evidence. A find that fails ends
// the wait with its error: an unknown outcome is never read as "not made".
func AwaitLate[T any](ctx context.Context, window time.Duration, find func(context.Context) ([]T, error)) ([]T, error) {
	deadline := time.Now().Add(window)
	poll := ctxwait.NewBackoff(latePoll)
	for {
		found, err := find(ctx)
		if err != nil || len(found) > 0 || !time.Now().Before(deadline) {
			return found, err
		}
		if err := ctxwait.Sleep(ctx, min(poll.Next(), time.Until(deadline))); err != nil {
			return nil, err
		}
	}
}

// Duplicate is one of several owned resources that carry one name, as
// DedupeOwned judges it.
type Duplicate[T any] struct {
	Item T
	// ID names it in messages.
	ID string
	// InUse says something depends on it (a bound port, an ACTIVE server,
	// a Node, an attachment); a resource whose use could not be read must
	// report true.
	InUse bool
}

// DedupeOwned decides which of several owned resources of one name (what a
// create applied late, besides the one created again) to keep: the one in
// use, or the first when none is. It returns the others, to delete. Two or
// more in use are never chosen between: the error names them all, for a
// person to decide.
func DedupeOwned[T any](what string, dups []Duplicate[T]) (keep T, drop []T, err error) {
	var used []string
	k := 0
	for i, d := range dups {
		if d.InUse {
			used = append(used, d.ID)
			k = i
		}
	}
	if len(used) > 1 {
		return keep, nil, fmt.Errorf("%s: %d owned resources of this name are in use (%s): talosc cannot tell which to keep; delete the one that is not wanted", what, len(used), strings.Join(used, ", "))
	}
	for i, d := range dups {
		if i != k {
			drop = append(drop, d.Item)
		}
	}
	if len(dups) == 0 {
		return keep, nil, fmt.Errorf("%s: no resource to keep", what)
	}
	return dups[k].Item, drop, nil
}
