// Package talosapi is the Talos API as the nodes phase uses it: machinery's
// gRPC client over mTLS, built from the cluster identity, talking to one
// real control-plane endpoint (never the kube-API VIP, I-A1) and reaching
// other nodes through apid's "node" metadata, as `talosctl -e EP -n NODE`
// does.
//
// Every call is bounded by Options.CallTimeout (an image pull and an
// installer run by their own timeouts) and its error names the call and
// the node ("talos Version on 127.16.0.11: timed out after 30s"). The
// waits (WaitReachable, Bootstrap's retries, Health, WaitRebooted, Reset)
// have budgets of their own, which the caller passes (the reference's,
// I-X2, are the nodes phase's).
package talosapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// The reference's bounds (spec §3.1 steps 13-15, I-X2).
const (
	// DefaultCallTimeout bounds one Talos API call.
	DefaultCallTimeout = 30 * time.Second
	// DefaultPullTimeout bounds one image pull (an installer, a
	// Kubernetes image): a pull streams for as long as the registry takes.
	DefaultPullTimeout = 10 * time.Minute
	// DefaultInstallTimeout bounds one run of the installer (Upgrade after
	// its pull). talosctl bounds the whole upgrade, reboot included, by
	// 30 minutes (I-R4's budget).
	DefaultInstallTimeout = 10 * time.Minute
	// DefaultMaxReconnectDelay caps gRPC's reconnect backoff, so a node
	// that comes up is seen at the next poll rather than minutes later.
	DefaultMaxReconnectDelay = 5 * time.Second
	// DefaultRetryInterval is the pause between Bootstrap attempts.
	DefaultRetryInterval = 5 * time.Second
)

// Options tune a Client. Zero fields take the defaults above.
type Options struct {
	// CallTimeout bounds every call but the streams below.
	CallTimeout time.Duration
	// PullTimeout bounds an image pull.
	PullTimeout time.Duration
	// InstallTimeout bounds an installer run.
	InstallTimeout time.Duration
	// MaxReconnectDelay caps gRPC's reconnect backoff.
	MaxReconnectDelay time.Duration
	// RetryInterval is the pause between Bootstrap attempts.
	RetryInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = DefaultPullTimeout
	}
	if o.InstallTimeout <= 0 {
		o.InstallTimeout = DefaultInstallTimeout
	}
	if o.MaxReconnectDelay <= 0 {
		o.MaxReconnectDelay = DefaultMaxReconnectDelay
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	return o
}

// Client is a connection to one Talos API endpoint.
type Client struct {
	c        *client.Client
	endpoint string
	opts     Options
}

// Dial returns a client for endpoint (an address or host, port 50000 unless
// given) authenticated with a fresh admin certificate of the cluster
// identity id (see identity.Talosconfig). It does not touch the network:
// the connection is made by the first call.
func Dial(ctx context.Context, id *identity.Identity, clusterName, endpoint string, o Options) (*Client, error) {
	o = o.withDefaults()
	tc, err := identity.Talosconfig(id, clusterName, endpoint)
	if err != nil {
		return nil, fmt.Errorf("talos API %s: %w", endpoint, err)
	}
	bo := backoff.DefaultConfig
	bo.MaxDelay = o.MaxReconnectDelay
	// Reconnect soon after a refused attempt (a node that is booting
	// answers within a second), backing off to the cap.
	bo.BaseDelay = min(ctxwait.FirstPoll, o.MaxReconnectDelay)
	// A connection attempt may take as long as a call (gRPC bounds it by
	// the larger of this and the current backoff).
	c, err := client.New(ctx, client.WithConfig(tc), client.WithGRPCDialOptions(
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: o.CallTimeout}),
	))
	if err != nil {
		return nil, fmt.Errorf("talos API %s: %w", endpoint, err)
	}
	return &Client{c: c, endpoint: endpoint, opts: o}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// timeoutError is a call that ran out of Options.CallTimeout.
type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("timed out after %s", e.after) }

// Is makes a timeout a context.DeadlineExceeded for errors.Is.
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// call runs fn against node with the call's bound, naming the call and the
// node in its error. node "" is the endpoint itself (no "node" metadata).
func (c *Client) call(ctx context.Context, name, node string, bound time.Duration, fn func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	target := c.endpoint
	if node != "" {
		cctx, target = client.WithNode(cctx, node), node
	}
	err := fn(cctx)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && (cctx.Err() != nil || ranOut(cctx, err)) {
		err = &timeoutError{after: bound}
	}
	return fmt.Errorf("talos %s on %s: %w", name, target, err)
}

// readAttempts is how often a read is tried when the node answers
// Unavailable (apid restarting, a proxy hiccup). A read through apid's
// proxy crosses two hops that can each say Unavailable; five attempts
// make a 5 % hiccup rate fail a read about once in ten million.
const readAttempts = 5

// read is call for an RPC that is safe to repeat (a read, or a change
// that is done once done): an Unavailable answer is retried up to
// readAttempts times, Options.RetryInterval apart.
func (c *Client) read(ctx context.Context, name, node string, fn func(context.Context) error) error {
	return c.readWithin(ctx, name, node, c.opts.CallTimeout, false, fn)
}

// readWithin is read with each attempt bounded by bound; lostToo retries
// an answer lost after the node took the call as well (DeadlineExceeded
// from apid or a proxy, or the attempt's own bound running out), for a
// call whose repetition is harmless however far the first one got (an
// image pull).
func (c *Client) readWithin(ctx context.Context, name, node string, bound time.Duration, lostToo bool, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := c.call(ctx, name, node, bound, fn)
		again := status.Code(err) == codes.Unavailable || lostToo && ctx.Err() == nil && (answerLost(err) || errors.Is(err, context.DeadlineExceeded))
		if err == nil || attempt == readAttempts || !again {
			return err
		}
		if ctxwait.Sleep(ctx, c.opts.RetryInterval) != nil {
			return err
		}
	}
}

// deadlineSlack is how early the node's copy of a call's deadline (sent
// with the call) may fire before the client's own.
const deadlineSlack = 100 * time.Millisecond

// ranOut reports a DeadlineExceeded answer to a call whose own deadline is
// (all but) over: the node gave up on our deadline first. A node's
// DeadlineExceeded well before it (the health check's own wait) is its
// answer.
func ranOut(ctx context.Context, err error) bool {
	dl, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(dl) < deadlineSlack
}

// pollUntil calls attempt until it reports done or budget runs out, the
// pauses backing off from ctxwait.FirstPoll to interval; it returns
// attempt's last error then (attempt returns an error whenever it is not
// done), or the context's.
func pollUntil(ctx context.Context, budget, interval time.Duration, attempt func(context.Context) (done bool, err error)) error {
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	pause := ctxwait.NewBackoff(interval)
	for {
		done, err := attempt(bctx)
		if done && err != nil && bctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("still failing after %s: %w", budget, err) // the budget cut the attempt short
		}
		if done {
			return err
		}
		if pause.Sleep(bctx) != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("still failing after %s: %w", budget, err)
		}
	}
}
