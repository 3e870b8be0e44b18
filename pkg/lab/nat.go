package lab

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

// natPorts are the ports a floating IP forwards: the Talos API, the
// Kubernetes API and ingress.
func natPorts() []int { return []int{50000, 6443, 80, 443} }

// nat serves floating IPs as a cloud's NAT would: TCP connections to a
// floating address are forwarded to the fixed address it is associated with.
type nat struct {
	mu        sync.Mutex
	listeners map[netip.Addr][]net.Listener
	targets   map[netip.Addr]netip.Addr
}

func newNAT() *nat {
	return &nat{listeners: map[netip.Addr][]net.Listener{}, targets: map[netip.Addr]netip.Addr{}}
}

// add forwards fip to fixed (replacing an earlier association).
func (n *nat) add(ctx context.Context, fip, fixed netip.Addr) error {
	n.remove(fip)
	var ls []net.Listener
	for _, port := range natPorts() {
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

// target returns the fixed address fip forwards to.
func (n *nat) target(fip netip.Addr) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.targets[fip]
	return t, ok
}

// remove stops forwarding fip.
func (n *nat) remove(fip netip.Addr) {
	n.mu.Lock()
	ls := n.listeners[fip]
	delete(n.listeners, fip)
	delete(n.targets, fip)
	n.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
}

// close stops every forward.
func (n *nat) close() error {
	n.mu.Lock()
	fips := make([]netip.Addr, 0, len(n.listeners))
	for fip := range n.listeners {
		fips = append(fips, fip)
	}
	n.mu.Unlock()
	for _, fip := range fips {
		n.remove(fip)
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
