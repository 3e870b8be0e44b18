package talosapi_test

import (
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// bigRequest is how many bytes a client must send on a connection after
// loseNextBigAnswer for the proxy to hold back what the node answers: far
// more than a call of a few fields, far less than a machine configuration.
const bigRequest = 4096

// lossyProxy is a TCP proxy in front of one node's apid that can lose the
// answer to a call after the node got it: the connection breaks after the
// request went out, as a network would, so the node acts on a call whose
// answer never comes back. (TLS hides the calls from it, so it tells the
// call by its size.)
type lossyProxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	watch bool // loseNextBigAnswer armed
	conns []*lossyConn
}

// lossyConn is one proxied connection.
type lossyConn struct {
	client, node net.Conn
	sent         int  // client bytes since the proxy was armed
	holding      bool // the node's bytes are held back
}

// newLossyProxy proxies a fresh port of addr's loopback address to
// target.
func newLossyProxy(t *testing.T, addr netip.Addr, target string) *lossyProxy {
	t.Helper()
	l, err := labnet.Listen(t.Context(), netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{l: l, target: target}
	t.Cleanup(func() { _ = l.Close(); p.dropAll() })
	go p.serve()
	return p
}

// endpoint is the proxy's address.
func (p *lossyProxy) endpoint() string { return p.l.Addr().String() }

func (p *lossyProxy) serve() {
	for {
		cc, err := p.l.Accept()
		if err != nil {
			return
		}
		nc, err := labnet.Dialer().Dial("tcp", p.target)
		if err != nil {
			_ = cc.Close()
			continue
		}
		c := &lossyConn{client: cc, node: nc}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.pipe(c, cc, nc, true)
		go p.pipe(c, nc, cc, false)
	}
}

// pipe copies one direction; up is client to node.
func (p *lossyProxy) pipe(c *lossyConn, from, to net.Conn, up bool) {
	defer func() { _ = from.Close(); _ = to.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if up && p.watch {
				if c.sent += n; c.sent > bigRequest {
					c.holding, p.watch = true, false
				}
			}
			hold := !up && c.holding
			p.mu.Unlock()
			if !hold {
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// loseNextBigAnswer arms the proxy: the next call that sends more than
// bigRequest bytes reaches the node, but nothing the node sends on that
// connection afterwards is delivered (until dropAll breaks it).
func (p *lossyProxy) loseNextBigAnswer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = true
	for _, c := range p.conns {
		c.sent = 0
	}
}

// holdAnswers holds back everything the node sends on the connections
// open now, as a network that stopped delivering would.
func (p *lossyProxy) holdAnswers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.holding = true
	}
}

// dropAll breaks every proxied connection.
func (p *lossyProxy) dropAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.client.Close()
		_ = c.node.Close()
	}
}
