package lab

import (
	"net/netip"
	"sync"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// nodeKnobs sets the scripted faults of the Talos nodes, including nodes
// that have not booted yet: their knobs wait here for the boot.
type nodeKnobs struct {
	fleet *talosnode.Fleet

	// mu orders a boot and a set for the same address, so knobs set while
	// the node boots are not lost.
	mu      sync.Mutex
	pending map[netip.Addr]talosnode.Knobs
}

// set gives the node at addr its knobs (now); without a node there and
// with pending, it keeps them for the next node that boots at addr (later).
func (nk *nodeKnobs) set(addr netip.Addr, k talosnode.Knobs, pending bool) (now, later bool) {
	nk.mu.Lock()
	defer nk.mu.Unlock()
	if n, ok := nk.fleet.Node(addr); ok {
		n.SetKnobs(k)
		return true, false
	}
	if pending {
		nk.pending[addr] = k
	}
	return false, pending
}

// boot boots a node at addr from config with the knobs waiting for it;
// opts say how the cloud starts it (talosnode.DiskImage).
func (nk *nodeKnobs) boot(addr netip.Addr, config []byte, opts ...talosnode.VMOption) error {
	nk.mu.Lock()
	defer nk.mu.Unlock()
	if _, err := nk.fleet.Boot(addr, config, nk.pending[addr], opts...); err != nil {
		return err
	}
	delete(nk.pending, addr)
	return nil
}
