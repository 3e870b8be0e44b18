// Package labnettest picks loopback address blocks for tests that run lab
// services (apid above all) on per-node addresses, so parallel tests and
// packages do not fight over ports.
package labnettest

import (
	"errors"
	"hash/fnv"
	"net/netip"
	"syscall"
	"testing"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// apidPort is the port every simulated Talos node listens on.
const apidPort = 50000

// tries is how many candidate blocks Block looks at before giving up.
const tries = 64

// Block returns a loopback /24 for the test: the first pick(seed, try),
// try = 0, 1, …, whose first nodes node addresses (see NodeAddr) have
// apid's port free. seed is a hash of tb.Name(), so a test keeps its block
// from run to run; pick maps it into the caller's own range of 127.0.0.0/8,
// which must not overlap another package's (their tests run in parallel).
func Block(tb testing.TB, nodes int, pick func(seed, try uint32) netip.Prefix) netip.Prefix {
	tb.Helper()
	h := fnv.New32a()
	_, _ = h.Write([]byte(tb.Name()))
	seed := h.Sum32()
	for try := range uint32(tries) {
		if p := pick(seed, try); blockFree(tb, p, nodes) {
			return p
		}
	}
	tb.Fatalf("no free loopback block for apid in %d tries", tries)
	return netip.Prefix{}
}

// blockFree reports whether apid's port is free on the first nodes node
// addresses of p.
func blockFree(tb testing.TB, p netip.Prefix, nodes int) bool {
	tb.Helper()
	for i := range nodes {
		l, err := labnet.Listen(tb.Context(), netip.AddrPortFrom(NodeAddr(p, i), apidPort).String())
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return false
			}
			tb.Fatal(err)
		}
		_ = l.Close()
	}
	return true
}

// NodeAddr is node i's address in block p (.11, .12, …).
func NodeAddr(p netip.Prefix, i int) netip.Addr {
	b := p.Addr().As4()
	b[3] = byte(11 + i)
	return netip.AddrFrom4(b)
}
