package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// gate opens and closes the API's address, as a VIP appears on and
// disappears from the network: while closed the port refuses connections
// and the connections it had accepted are cut (their owner is gone).
type gate struct {
	addr  string
	serve func(net.Listener) // serves one listener until it is closed

	mu     sync.Mutex
	ln     net.Listener // nil while closed
	conns  map[*gatedConn]struct{}
	closed bool // for good (Server.Close)
}

// newGate serves ln (open) with serve.
func newGate(ln net.Listener, serve func(net.Listener)) *gate {
	g := &gate{addr: ln.Addr().String(), serve: serve, conns: map[*gatedConn]struct{}{}}
	g.open(ln)
	return g
}

// open serves ln; g.mu held or g not shared yet.
func (g *gate) open(ln net.Listener) {
	g.ln = &gatedListener{Listener: ln, g: g}
	go g.serve(g.ln)
}

// set opens (listens again on the same address) or closes the gate.
func (g *gate) set(open bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return errors.New("kubeapi: the server is closed")
	case open == (g.ln != nil):
		return nil
	case open:
		ln, err := labnet.Listen(context.Background(), g.addr)
		if err != nil {
			return fmt.Errorf("kubeapi: serve again: %w", err)
		}
		g.open(ln)
		return nil
	default:
		g.shutLocked()
		return nil
	}
}

// close shuts the gate for good.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.shutLocked()
}

// shutLocked closes the listener and every accepted connection; g.mu held.
func (g *gate) shutLocked() {
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
	for c := range g.conns {
		_ = c.Conn.Close() // not c.Close: that takes g.mu
	}
	clear(g.conns)
}

// gatedListener registers what it accepts with its gate.
type gatedListener struct {
	net.Listener
	g *gate
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &gatedConn{Conn: c, g: l.g}
	l.g.mu.Lock()
	defer l.g.mu.Unlock()
	if l.g.ln != l { // shut while accepting
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.g.conns[gc] = struct{}{}
	return gc, nil
}

// gatedConn leaves its gate's set when closed.
type gatedConn struct {
	net.Conn
	g    *gate
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}
