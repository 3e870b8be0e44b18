package ctxwait

import (
	"context"
	"time"
)

// FirstPoll is the first pause of a Backoff: short, so a wait for
// something that is (nearly) done already ends within a fraction of a
// second, as on a lab whose machines boot in 200 ms.
const FirstPoll = 200 * time.Millisecond

// Backoff spaces the polls of a wait for a state (a node reachable, Ready,
// rebooted): the first pause is FirstPoll and each next one is half as
// long again, up to the wait's configured interval, which every later
// pause then keeps (so a state reached after t is seen by about 1.5 t). It
// shortens no budget (the caller's deadline still ends the wait) and only
// adds polls at the start, so it is for waits whose polls are cheap reads.
// A probe whose spacing is the point (I-3: give a slow API time before
// calling it down) keeps a fixed interval and uses Sleep instead.
type Backoff struct {
	next, limit time.Duration
}

// NewBackoff returns the back-off of a wait polled every interval: it
// starts at min(FirstPoll, interval).
func NewBackoff(interval time.Duration) *Backoff {
	return &Backoff{next: min(FirstPoll, interval), limit: interval}
}

// Next returns the next pause and makes the one after it half as long
// again, up to the interval.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(b.next+b.next/2, b.limit)
	return d
}

// Sleep waits the next pause, or returns ctx's error as soon as ctx ends.
func (b *Backoff) Sleep(ctx context.Context) error {
	return Sleep(ctx, b.Next())
}
