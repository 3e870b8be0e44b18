package lab

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// VIPStatus is a cluster's API VIP and the control plane holding it.
type VIPStatus struct {
	Cluster string     `json:"cluster"`
	Address netip.Addr `json:"address"`
	// Owner is the control plane holding the VIP; empty while nobody does
	// (the API does not answer).
	Owner netip.Addr `json:"owner,omitzero"`
}

// vips models Talos's Layer 2 VIP for every bootstrapped cluster whose
// control planes carry its API address in a Layer2VIPConfig: one eligible
// control plane (powered, apid up, configured with the VIP) owns it, and
// the API answers only while somebody does. When the owner goes down the
// VIP stays unowned for Timing.VIPFailover, then moves to another eligible
// control plane; when none is left, the first one to come back takes it.
type vips struct {
	lab   *Lab
	delay time.Duration

	mu        sync.Mutex
	byCluster map[string]*vip
	closed    bool
}

type vip struct {
	VIPStatus
	// failover is pending while the VIP waits for a new owner.
	failover *time.Timer
	// srv is the cluster's API, once started.
	srv *kubeapi.Server
}

// eligible reports whether a node may own v.
func (v *vip) eligible(st talosnode.NodeStatus) bool {
	return st.Powered && st.APIUp && st.ControlPlane && st.Cluster == v.Cluster && slices.Contains(st.VIPs, v.Address)
}

// bootstrapped starts tracking the cluster's API address when its control
// planes carry it as a VIP (an endpoint that is not a VIP is served always)
// and elects its first owner.
func (vs *vips) bootstrapped(cluster string, addr netip.Addr) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if _, ok := vs.byCluster[cluster]; ok {
		return
	}
	v := &vip{VIPStatus: VIPStatus{Cluster: cluster, Address: addr}}
	carried := false
	for _, n := range vs.lab.fleet.Nodes() {
		st := n.Status()
		carried = carried || st.Cluster == cluster && slices.Contains(st.VIPs, addr)
	}
	if carried {
		vs.byCluster[cluster] = v
		vs.electLocked(v)
	}
}

// attach hands the cluster's started API to its VIP: it serves while the
// VIP has an owner.
func (vs *vips) attach(cluster string, srv *kubeapi.Server) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v, ok := vs.byCluster[cluster]; ok {
		v.srv = srv
		vs.serveLocked(v)
	}
}

// forget stops tracking the cluster's VIP: its last control plane is gone,
// and a new cluster of the same name may take the address (or another).
func (vs *vips) forget(cluster string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v, ok := vs.byCluster[cluster]; ok {
		if v.failover != nil {
			v.failover.Stop()
		}
		delete(vs.byCluster, cluster)
	}
}

// onNodeEvent moves VIPs as their owners go down and eligible nodes come up.
func (vs *vips) onNodeEvent(ev talosnode.Event) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.closed {
		return
	}
	for _, v := range vs.byCluster {
		owner := v.Owner == ev.Node.Address
		switch ev.Kind {
		case talosnode.EventDown, talosnode.EventReset:
			if owner {
				vs.loseLocked(v)
			}
		case talosnode.EventBooted, talosnode.EventConfig:
			switch {
			case owner && !v.eligible(ev.Node): // its config no longer has the VIP
				vs.loseLocked(v)
			case !v.Owner.IsValid() && v.failover == nil && v.eligible(ev.Node):
				vs.takeLocked(v, ev.Node.Address)
			}
		}
	}
}

// loseLocked drops v's owner and elects another after the failover delay.
func (vs *vips) loseLocked(v *vip) {
	vs.takeLocked(v, netip.Addr{})
	v.failover = time.AfterFunc(vs.delay, func() {
		vs.mu.Lock()
		defer vs.mu.Unlock()
		v.failover = nil
		if !vs.closed && vs.byCluster[v.Cluster] == v {
			vs.electLocked(v)
		}
	})
}

// electLocked gives an unowned v to the first eligible control plane.
func (vs *vips) electLocked(v *vip) {
	if v.Owner.IsValid() {
		return
	}
	for _, n := range vs.lab.fleet.Nodes() {
		if st := n.Status(); v.eligible(st) {
			vs.takeLocked(v, st.Address)
			return
		}
	}
}

// takeLocked makes owner (invalid: nobody) v's owner.
func (vs *vips) takeLocked(v *vip, owner netip.Addr) {
	if v.Owner == owner {
		return
	}
	if owner.IsValid() {
		vs.lab.logf("vip %s of %s: owned by %s", v.Address, v.Cluster, owner)
	} else {
		vs.lab.logf("vip %s of %s: %s lost it, nobody owns it", v.Address, v.Cluster, v.Owner)
	}
	v.Owner = owner
	vs.serveLocked(v)
}

// serveLocked opens v's API while v has an owner.
func (vs *vips) serveLocked(v *vip) {
	if v.srv == nil {
		return
	}
	if err := v.srv.SetServing(v.Owner.IsValid()); err != nil {
		vs.lab.logf("vip %s of %s: %v", v.Address, v.Cluster, err)
	}
}

// status lists the VIPs by cluster.
func (vs *vips) status() []VIPStatus {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	out := make([]VIPStatus, 0, len(vs.byCluster))
	for _, v := range vs.byCluster {
		out = append(out, v.VIPStatus)
	}
	slices.SortFunc(out, func(a, b VIPStatus) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}

// close stops the pending failovers; later node events (the fleet
// powering everything off) change nothing.
func (vs *vips) close() error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.closed = true
	for _, v := range vs.byCluster {
		if v.failover != nil {
			v.failover.Stop()
		}
	}
	return nil
}
