// Package vip models Talos's Layer 2 API VIPs in the lab: which control
// plane owns each address a cluster's control planes carry, and whether
// the cluster's API answers on it.
package vip

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// Status is one API VIP of a cluster and the control plane holding it.
type Status struct {
	Cluster string     `json:"cluster"`
	Address netip.Addr `json:"address"`
	// Owner is the control plane holding the VIP; empty while nobody does
	// (the API does not answer on it).
	Owner netip.Addr `json:"owner,omitzero"`
}

// Tracker models Talos's Layer 2 VIPs for every bootstrapped cluster whose
// control planes carry its API address in a Layer2VIPConfig. Every address
// a control plane of the cluster carries is a VIP of its own, as Talos's
// VIP controller runs one election per address: one eligible control
// plane (powered, apid up, configured with the address) owns it, and the
// API answers on the address only while somebody does. When the owner goes
// down, or its configuration drops the address, the VIP stays unowned for
// Timing.VIPFailover, then moves to another eligible control plane; when
// none is left, the first one to come back takes it. So a VIP moved in
// the configurations moves on the network too: the new address answers
// as soon as one control plane carrying it is up, and the old one stops
// once no control plane's configuration carries it any more.
type Tracker struct {
	fleet *talosnode.Fleet
	logf  func(format string, args ...any)
	delay time.Duration

	mu        sync.Mutex
	byCluster map[string]*clusterVIPs
	closed    bool
}

// New tracks the VIPs of fleet's clusters: a VIP stays unowned for delay
// after its owner went down; logf receives every change of owner.
func New(fleet *talosnode.Fleet, delay time.Duration, logf func(format string, args ...any)) *Tracker {
	return &Tracker{fleet: fleet, logf: logf, delay: delay, byCluster: map[string]*clusterVIPs{}}
}

// clusterVIPs are one cluster's VIPs and its API.
type clusterVIPs struct {
	name   string
	byAddr map[netip.Addr]*vip
	// srv is the cluster's API, once started.
	srv *kubeapi.Server
}

// vip is one address of a cluster.
type vip struct {
	Status
	// failover is pending while the VIP waits for a new owner.
	failover *time.Timer
}

// eligible reports whether a node may own v.
func (v *vip) eligible(st talosnode.NodeStatus) bool {
	return st.Powered && st.APIUp && st.ControlPlane && st.Cluster == v.Cluster && slices.Contains(st.VIPs, v.Address)
}

// Bootstrapped starts tracking the cluster's VIPs when its control planes
// carry its API address as one (an endpoint that is not a VIP is served
// always) and elects their first owners.
func (vs *Tracker) Bootstrapped(cluster string, addr netip.Addr) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if _, ok := vs.byCluster[cluster]; ok {
		return
	}
	c := &clusterVIPs{name: cluster, byAddr: map[netip.Addr]*vip{}}
	if vs.carriedLocked(c)[addr] {
		vs.byCluster[cluster] = c
		vs.followLocked(c)
	}
}

// Attach hands the cluster's started API to its VIPs: it serves on each
// while the VIP has an owner.
func (vs *Tracker) Attach(cluster string, srv *kubeapi.Server) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if c, ok := vs.byCluster[cluster]; ok {
		c.srv = srv
		for _, v := range c.byAddr {
			vs.serveLocked(c, v)
		}
	}
}

// Forget stops tracking the cluster's VIPs: its last control plane is
// gone, and a new cluster of the same name may take the addresses (or
// others).
func (vs *Tracker) Forget(cluster string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if c, ok := vs.byCluster[cluster]; ok {
		for _, v := range c.byAddr {
			stop(v)
		}
		delete(vs.byCluster, cluster)
	}
}

// OnNodeEvent moves VIPs as their owners go down and eligible nodes come
// up, and follows the addresses the control planes' configurations carry.
func (vs *Tracker) OnNodeEvent(ev talosnode.Event) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.closed {
		return
	}
	for _, c := range vs.byCluster {
		for _, v := range c.byAddr {
			owner := v.Owner == ev.Node.Address
			switch ev.Kind {
			case talosnode.EventDown, talosnode.EventReset:
				if owner {
					vs.loseLocked(c, v)
				}
			case talosnode.EventBooted, talosnode.EventConfig:
				switch {
				case owner && !v.eligible(ev.Node): // its config no longer has the VIP
					vs.loseLocked(c, v)
				case !v.Owner.IsValid() && v.failover == nil && v.eligible(ev.Node):
					vs.takeLocked(c, v, ev.Node.Address)
				}
			}
		}
		if ev.Node.Cluster == c.name {
			vs.followLocked(c)
		}
	}
}

// carriedLocked is the set of addresses c's control planes carry as VIPs
// in their configurations, up or not.
func (vs *Tracker) carriedLocked(c *clusterVIPs) map[netip.Addr]bool {
	carried := map[netip.Addr]bool{}
	for _, n := range vs.fleet.Nodes() {
		if st := n.Status(); st.Cluster == c.name && st.ControlPlane {
			for _, a := range st.VIPs {
				carried[a] = true
			}
		}
	}
	return carried
}

// followLocked tracks every address c's control planes carry, electing
// an owner for each new one, and drops those none carries any more: the
// API stops answering there.
func (vs *Tracker) followLocked(c *clusterVIPs) {
	carried := vs.carriedLocked(c)
	for a, v := range c.byAddr {
		if !carried[a] {
			vs.logf("vip %s of %s: no control plane carries it any more", a, c.name)
			stop(v)
			v.Owner = netip.Addr{}
			vs.serveLocked(c, v)
			delete(c.byAddr, a)
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(carried), netip.Addr.Compare) {
		if _, ok := c.byAddr[a]; !ok {
			v := &vip{Status: Status{Cluster: c.name, Address: a}}
			c.byAddr[a] = v
			vs.electLocked(c, v)
		}
	}
}

// loseLocked drops v's owner and elects another after the failover delay.
func (vs *Tracker) loseLocked(c *clusterVIPs, v *vip) {
	vs.takeLocked(c, v, netip.Addr{})
	v.failover = time.AfterFunc(vs.delay, func() {
		vs.mu.Lock()
		defer vs.mu.Unlock()
		v.failover = nil
		if !vs.closed && vs.byCluster[c.name] == c && c.byAddr[v.Address] == v {
			vs.electLocked(c, v)
		}
	})
}

// electLocked gives an unowned v to the first eligible control plane.
func (vs *Tracker) electLocked(c *clusterVIPs, v *vip) {
	if v.Owner.IsValid() {
		return
	}
	for _, n := range vs.fleet.Nodes() {
		if st := n.Status(); v.eligible(st) {
			vs.takeLocked(c, v, st.Address)
			return
		}
	}
}

// takeLocked makes owner (invalid: nobody) v's owner.
func (vs *Tracker) takeLocked(c *clusterVIPs, v *vip, owner netip.Addr) {
	if v.Owner == owner {
		return
	}
	if owner.IsValid() {
		vs.logf("vip %s of %s: owned by %s", v.Address, v.Cluster, owner)
	} else {
		vs.logf("vip %s of %s: %s lost it, nobody owns it", v.Address, v.Cluster, v.Owner)
	}
	v.Owner = owner
	vs.serveLocked(c, v)
}

// serveLocked opens the API on v's address while v has an owner.
func (vs *Tracker) serveLocked(c *clusterVIPs, v *vip) {
	if c.srv == nil {
		return
	}
	if err := c.srv.SetServingOn(v.Address, v.Owner.IsValid()); err != nil {
		vs.logf("vip %s of %s: %v", v.Address, v.Cluster, err)
	}
}

// stop cancels v's pending failover.
func stop(v *vip) {
	if v.failover != nil {
		v.failover.Stop()
		v.failover = nil
	}
}

// Owner is the control plane holding cluster's VIP addr; invalid when
// nobody does or addr is no VIP the lab tracks.
func (vs *Tracker) Owner(cluster string, addr netip.Addr) netip.Addr {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if c, ok := vs.byCluster[cluster]; ok {
		if v, ok := c.byAddr[addr]; ok {
			return v.Owner
		}
	}
	return netip.Addr{}
}

// Status lists the VIPs by cluster and address.
func (vs *Tracker) Status() []Status {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	var out []Status
	for _, c := range vs.byCluster {
		for _, v := range c.byAddr {
			out = append(out, v.Status)
		}
	}
	slices.SortFunc(out, func(a, b Status) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), a.Address.Compare(b.Address))
	})
	return out
}

// Close stops the pending failovers; later node events (the fleet
// powering everything off) change nothing.
func (vs *Tracker) Close() error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.closed = true
	for _, c := range vs.byCluster {
		for _, v := range c.byAddr {
			stop(v)
		}
	}
	return nil
}
