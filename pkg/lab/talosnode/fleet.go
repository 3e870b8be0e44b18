package talosnode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/constants"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Fleet is every simulated Talos node of a lab and the clusters they form.
// One mutex guards the whole simulation (the load is a handful of nodes);
// COSI resources and gRPC servers live outside it.
type Fleet struct {
	opts   Options
	timing Timing

	mu       sync.Mutex
	nodes    map[netip.Addr]*Node
	clusters map[string]*Cluster
	closed   bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	conns  conns // apid's client connections, for injected resets
}

// New returns an empty fleet.
func New(opts Options) *Fleet {
	ctx, cancel := context.WithCancel(context.Background())
	if opts.Port == 0 {
		opts.Port = constants.ApidPort
	}
	return &Fleet{
		opts:     opts,
		timing:   opts.Timing.withDefaults(),
		nodes:    map[netip.Addr]*Node{},
		clusters: map[string]*Cluster{},
		ctx:      ctx,
		cancel:   cancel,
	}
}

// ErrClosed is returned by a closed fleet.
var ErrClosed = errors.New("talos fleet is closed")

// Boot creates the VM of a node at addr (a 127.0.0.0/8 address) from the
// machine configuration it was given (user_data, the cidata ISO) and powers
// it on: apid listens on addr:50000 after Timing.Boot. An empty config boots
// into maintenance mode. The config stays the node's platform user data
// (see Node.SetUserData): a node wiped by a reset takes it again at its
// next boot, as Talos does. knobs are the node's scripted faults; opts say
// how the cloud starts the VM (DiskImage).
func (f *Fleet) Boot(addr netip.Addr, config []byte, knobs Knobs, opts ...VMOption) (*Node, error) {
	n, err := f.Create(addr, config, knobs, opts...)
	if err != nil {
		return nil, err
	}
	n.PowerOn()
	return n, nil
}

// VMOption is how a cloud starts a VM, beyond its configuration.
type VMOption func(*vmOptions)

// vmOptions are the VMOptions given.
type vmOptions struct {
	// disk is the Talos the VM's disk holds; nil: the VM boots install
	// media.
	disk *Image
}

// DiskImage makes the VM boot from a disk that already holds Talos, as an
// OpenStack server boots from its Glance image: the fresh node runs that
// image's Talos version and schematic whatever its configuration's install
// image says, until an upgrade installs another (or a reset wipes the disk
// and an install runs the configuration's installer). Without it the VM
// boots install media (Proxmox's ISO of the node's own schematic) and
// installs its configuration's installer.
func DiskImage(img Image) VMOption {
	return func(o *vmOptions) { o.disk = &img }
}

// Create creates a powered-off node (see Boot).
func (f *Fleet) Create(addr netip.Addr, config []byte, knobs Knobs, opts ...VMOption) (*Node, error) {
	var vm vmOptions
	for _, o := range opts {
		o(&vm)
	}
	if err := labnet.CheckLoopback(addr.String()); err != nil {
		return nil, fmt.Errorf("talos node: %w", err)
	}
	var mc *machineConfig
	if len(config) > 0 {
		var err error
		if mc, err = parseMachineConfig(config); err != nil {
			return nil, fmt.Errorf("talos node %s: %w", addr, err)
		}
	}
	n := newNode(f, addr, knobs)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if _, dup := f.nodes[addr]; dup {
		return nil, fmt.Errorf("talos node %s: address already used by another node", addr)
	}
	f.nodes[addr] = n
	if mc != nil {
		n.userData = mc
		n.install(mc)
	}
	if vm.disk != nil {
		n.image = *vm.disk // it runs from the disk: nothing was installed
	}
	return n, nil
}

// Node returns the node at addr.
func (f *Fleet) Node(addr netip.Addr) (*Node, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[addr]
	return n, ok
}

// Nodes returns every node, ordered by address.
func (f *Fleet) Nodes() []*Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Node, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Node) int { return a.addr.Compare(b.addr) })
	return out
}

// Clusters returns every cluster a node ever booted into, by name.
func (f *Fleet) Clusters() []*Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Cluster, 0, len(f.clusters))
	for _, c := range f.clusters {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Cluster) int { return cmp.Compare(a.name, b.name) })
	return out
}

// Destroy deletes the node's VM: it powers off and its address is freed. Its
// etcd member, if any, stays (a deleted VM does not leave etcd).
func (f *Fleet) Destroy(addr netip.Addr) {
	n, ok := f.Node(addr)
	if !ok {
		return
	}
	n.PowerOff()
	f.mu.Lock()
	delete(f.nodes, addr)
	c := n.cluster
	if c != nil {
		c.forget(n)
	}
	f.mu.Unlock()
	if c != nil {
		c.nodesChanged()
	}
}

// Close stops every node and waits for the simulation's tasks.
func (f *Fleet) Close() error {
	f.mu.Lock()
	f.closed = true
	nodes := make([]*Node, 0, len(f.nodes))
	for _, n := range f.nodes {
		nodes = append(nodes, n)
	}
	f.mu.Unlock()
	f.cancel()
	for _, n := range nodes {
		n.PowerOff()
	}
	f.wg.Wait()
	return nil
}

// cluster returns (creating) the cluster of a config; f.mu is held.
func (f *Fleet) clusterFor(mc *machineConfig) *Cluster {
	c, ok := f.clusters[mc.clusterKey()]
	if !ok {
		c = newCluster(f, mc)
		f.clusters[mc.clusterKey()] = c
	}
	return c
}

// lookup finds a node by a "node" metadata target: an IP (with or without
// port) or a hostname. f.mu is held.
func (f *Fleet) lookup(target string) *Node {
	if ap, err := netip.ParseAddrPort(target); err == nil {
		target = ap.Addr().String()
	}
	if a, err := netip.ParseAddr(target); err == nil {
		return f.nodes[a]
	}
	for _, n := range f.nodes {
		if n.hostname() == target {
			return n
		}
	}
	return nil
}

// Timing is how long the fleet's simulated work takes, defaults filled in.
func (f *Fleet) Timing() Timing {
	return f.timing
}

// after runs fn after d in the fleet's lifetime, unless the fleet closes.
func (f *Fleet) after(d time.Duration, fn func()) {
	f.wg.Go(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-f.ctx.Done():
		case <-t.C:
			fn()
		}
	})
}

// emit sends an event to Options.OnEvent.
func (f *Fleet) emit(kind EventKind, n *Node) {
	if f.opts.OnEvent != nil {
		f.opts.OnEvent(Event{Kind: kind, Node: n.Status()})
	}
}

// emitStatus sends an event with a status taken earlier (a wiped node no
// longer knows its hostname).
func (f *Fleet) emitStatus(kind EventKind, st NodeStatus) {
	if f.opts.OnEvent != nil {
		f.opts.OnEvent(Event{Kind: kind, Node: st})
	}
}
