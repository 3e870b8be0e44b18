package talosnode

import (
	"net/url"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// Cluster is one Talos cluster identity (cluster id and secret of the
// machine configs): its discovery members and its etcd. Its state is
// guarded by the fleet's mutex.
type Cluster struct {
	fleet *Fleet
	key   string
	name  string

	endpoint *url.URL
	// members are the nodes registered with discovery, in registration
	// order: a node registers when it first boots and leaves on reset.
	members []*Node
	etcd    etcdCluster
	kube    KubeAPI
	// doubleBootstrap names control planes bootstrapped after the cluster
	// already was: each made a second etcd cluster.
	doubleBootstrap []string
}

// newCluster starts the cluster of a config; f.mu is held.
func newCluster(f *Fleet, mc *machineConfig) *Cluster {
	c := &Cluster{fleet: f, key: mc.clusterKey(), name: mc.clusterName, endpoint: mc.endpoint}
	c.etcd.seed = mc.clusterKey()
	return c
}

// Name is the cluster name of the machine configs.
func (c *Cluster) Name() string { return c.name }

// Endpoint is the cluster endpoint of the machine configs.
func (c *Cluster) Endpoint() *url.URL {
	u := *c.endpoint
	return &u
}

// Bootstrapped reports whether etcd was bootstrapped.
func (c *Cluster) Bootstrapped() bool {
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	return c.etcd.bootstrapped
}

// DoubleBootstrapped names the control planes that were bootstrapped while
// the cluster's etcd already existed (a split brain a real cluster would
// suffer); empty for a correctly bootstrapped cluster.
func (c *Cluster) DoubleBootstrapped() []string {
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	return slices.Clone(c.doubleBootstrap)
}

// Nodes returns the cluster's discovery members (nodes that booted with its
// identity and were not reset since).
func (c *Cluster) Nodes() []*Node {
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	return slices.Clone(c.members)
}

// EtcdMember is one etcd member as the simulation sees it.
type EtcdMember struct {
	ID       uint64
	Hostname string // empty until the member started
	Address  string
	Learner  bool
	Up       bool
}

// EtcdMembers returns the etcd member list (regardless of quorum).
func (c *Cluster) EtcdMembers() []EtcdMember {
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	out := make([]EtcdMember, 0, len(c.etcd.members))
	for _, m := range c.etcd.members {
		out = append(out, EtcdMember{ID: m.id, Hostname: m.name, Address: m.addr.String(), Learner: m.learner, Up: m.up()})
	}
	return out
}

// Quorum reports whether etcd has quorum (a majority of its voting members
// up).
func (c *Cluster) Quorum() bool {
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	return c.etcd.quorum()
}

// register makes n a discovery member; f.mu is held.
func (c *Cluster) register(n *Node) {
	if !slices.Contains(c.members, n) {
		c.members = append(c.members, n)
	}
}

// forget removes n from discovery; f.mu is held.
func (c *Cluster) forget(n *Node) {
	c.members = slices.DeleteFunc(c.members, func(m *Node) bool { return m == n })
}

// controlPlanes are the discovery members that are control planes; f.mu is
// held.
func (c *Cluster) controlPlanes() []*Node {
	var out []*Node
	for _, n := range c.members {
		if n.cfg != nil && n.cfg.machineType != machine.TypeWorker {
			out = append(out, n)
		}
	}
	return out
}

// kubeAPI returns the cluster's Kubernetes API (nil when the lab has none).
// The lab's factory runs outside the fleet's lock: it may look at c.
func (c *Cluster) kubeAPI() KubeAPI {
	c.fleet.mu.Lock()
	api, factory := c.kube, c.fleet.opts.KubeAPI
	c.fleet.mu.Unlock()
	if api != nil || factory == nil {
		return api
	}
	api = factory(c)
	c.fleet.mu.Lock()
	defer c.fleet.mu.Unlock()
	if c.kube == nil {
		c.kube = api
	}
	return c.kube
}

// nodesChanged refreshes every member's COSI resources; f.mu is NOT held.
func (c *Cluster) nodesChanged() {
	for _, n := range c.Nodes() {
		n.syncResources()
	}
}
