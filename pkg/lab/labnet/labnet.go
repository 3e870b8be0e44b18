// Package labnet is the plumbing every talosc-lab service shares: loopback-only
// listeners, the call recorder, and fault injection (latency, 5xx error
// rates, hangs and scripted faults) with seeded randomness so a failing run
// can be replayed.
package labnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// ReadHeaderTimeout bounds how long a lab server waits for request headers.
const ReadHeaderTimeout = 10 * time.Second

// ErrNotLoopback is returned for any address outside 127.0.0.0/8.
var ErrNotLoopback = errors.New("the lab only uses loopback addresses (127.0.0.0/8)")

// CheckLoopback refuses any host that is not an IPv4 address in 127.0.0.0/8
// ("localhost" is refused too: it may resolve elsewhere).
func CheckLoopback(host string) error {
	addr, err := netip.ParseAddr(host)
	if err != nil || !addr.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(addr) {
		return fmt.Errorf("%q: %w", host, ErrNotLoopback)
	}
	return nil
}

// Listen opens a TCP listener on addr ("127.x.y.z:port"; port 0 picks one),
// refusing any address outside 127.0.0.0/8.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	if err := CheckLoopback(host); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return l, nil
}

// Dialer returns a dialer for clients of the lab that refuses to dial any
// address outside 127.0.0.0/8.
func Dialer() *net.Dialer {
	return &net.Dialer{ControlContext: func(_ context.Context, _, address string, _ syscallRawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		return CheckLoopback(host)
	}}
}
