// Package nat serves a cloud's floating IPs on loopback: TCP connections to
// a floating address are forwarded to the fixed address it is associated
// with, on the ports Ports lists.
package nat

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Ports are the ports a floating IP forwards: the Talos API, the
// Kubernetes API and ingress.
func Ports() []int { return []int{50000, 6443, 80, 443} }

// NAT serves floating IPs as a cloud's NAT would: TCP connections to a
// floating address are forwarded to the fixed address it is associated with.
type NAT struct {
	mu        sync.Mutex
	listeners map[netip.Addr][]net.Listener
	targets   map[netip.Addr]netip.Addr
}

// New returns a NAT forwarding nothing yet.
func New() *NAT {
	return &NAT{listeners: map[netip.Addr][]net.Listener{}, targets: map[netip.Addr]netip.Addr{}}
}

// Add forwards fip to fixed (replacing an earlier association).
func (n *NAT) Add(ctx context.Context, fip, fixed netip.Addr) error {
	n.Remove(fip)
	var ls []net.Listener
	for _, port := range Ports() {
		l, err := labnet.Listen(ctx, net.JoinHostPort(fip.String(), strconv.Itoa(port)))
		if err != nil {
			for _, o := range ls {
				_ = o.Close()
			}
			return err
		}
		ls = append(ls, l)
		go forward(l, net.JoinHostPort(fixed.String(), strconv.Itoa(port)))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.listeners[fip], n.targets[fip] = ls, fixed
	return nil
}

// Target returns the fixed address fip forwards to.
func (n *NAT) Target(fip netip.Addr) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.targets[fip]
	return t, ok
}

// Remove stops forwarding fip.
func (n *NAT) Remove(fip netip.Addr) {
	n.mu.Lock()
	ls := n.listeners[fip]
	delete(n.listeners, fip)
	delete(n.targets, fip)
	n.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
}

// Close stops every forward.
func (n *NAT) Close() error {
	n.mu.Lock()
	fips := make([]netip.Addr, 0, len(n.listeners))
	for fip := range n.listeners {
		fips = append(fips, fip)
	}
	n.mu.Unlock()
	for _, fip := range fips {
		n.Remove(fip)
	}
	return nil
}

// forward accepts on l and pipes every connection to target.
func forward(l net.Listener, target string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			up, err := labnet.Dialer().DialContext(context.Background(), "tcp", target)
			if err != nil {
				return
			}
			defer func() { _ = up.Close() }()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, err := io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok && (err == nil || errors.Is(err, net.ErrClosed)) {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			<-done
			<-done
		}()
	}
}
