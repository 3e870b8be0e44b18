package config

import (
	"fmt"
	"slices"
)

// Machine roles.
const (
	RoleControlPlane = "controlplane"
	RoleWorker       = "worker"
)

// maxHostname is the longest hostname (one DNS label) a machine may have.
const maxHostname = 63

// maxMachines is the most nodes Kubernetes supports in one cluster; larger
// counts are typos, and would make every plan enumerate them.
const maxMachines = 5000

// Machine is one desired machine of the cluster.
type Machine struct {
	// Hostname is <name>-controlplane-NN or <name>-<pool>-NN.
	Hostname string
	// Role is RoleControlPlane or RoleWorker.
	Role string
	// Pool is "controlplane" or the worker pool name.
	Pool string
	// Index is the 1-based ordinal within the pool.
	Index int
}

// Hostname returns the hostname of machine index (1-based) of a pool:
// <cluster>-<pool>-NN, zero-padded to two digits (%02d).
func Hostname(cluster, pool string, index int) string {
	return fmt.Sprintf("%s-%s-%02d", cluster, pool, index)
}

// Hostnames returns every desired machine: control planes first, then the
// worker pools in file order, each numbered from 1.
func (c *Cluster) Hostnames() []Machine {
	var out []Machine
	add := func(p Pool, role string) {
		for i := 1; i <= p.Count; i++ {
			out = append(out, Machine{Hostname: Hostname(c.Name, p.Name, i), Role: role, Pool: p.Name, Index: i})
		}
	}
	add(c.ControlPlane, RoleControlPlane)
	for _, p := range c.Workers {
		add(p, RoleWorker)
	}
	return out
}

// PoolOf returns the pool named name ("controlplane" or a worker pool)
// and its cluster.yaml key ("controlplane", "workers.<name>").
func (c *Cluster) PoolOf(name string) (Pool, string, bool) {
	if name == RoleControlPlane {
		return c.ControlPlane, "controlplane", true
	}
	for _, p := range c.Workers {
		if p.Name == name {
			return p, "workers." + p.Name, true
		}
	}
	return Pool{}, "", false
}

// pools checks the control-plane and worker pools (§2.3 pools).
func (v *validator) pools(provider string) {
	cp := &v.c.ControlPlane
	cp.Name = RoleControlPlane
	if v.required("controlplane") {
		v.pool(cp, "controlplane", provider)
		cpCountWarnings(v, cp)
	}
	for i := range v.c.Workers {
		p := &v.c.Workers[i]
		path := "workers." + p.Name
		switch {
		case p.Name == RoleControlPlane:
			v.errf(path, "is not allowed: worker pool name 'controlplane' is reserved")
		case !isDNSLabel(p.Name):
			v.errf(path, "is not a valid pool name: use lowercase letters, digits and '-', starting and ending with a letter or digit")
		}
		v.pool(p, path, provider)
	}
	v.totalMachines()
}

func (v *validator) totalMachines() {
	total, path := 0, "controlplane.count"
	for _, p := range append(Pools{v.c.ControlPlane}, v.c.Workers...) {
		if p.Count > 0 {
			total += min(p.Count, maxMachines+1)
		}
		if p.Count > 0 && p.Name != RoleControlPlane {
			path = "workers." + p.Name + ".count"
		}
	}
	if total > maxMachines {
		v.problem(path, fmt.Sprintf("the pools add up to more than %d machines, the most Kubernetes supports in one cluster", maxMachines))
	}
}

func cpCountWarnings(v *validator, cp *Pool) {
	switch {
	case !v.has("controlplane.count") || cp.Count < 1:
	case cp.Count == 1:
		v.warnf("single controlplane, no HA")
	case cp.Count%2 == 0:
		v.warnf("even controlplane count (%d), etcd needs a majority", cp.Count)
	}
}

func (v *validator) pool(p *Pool, path string, provider string) {
	minCount := 0
	if p.Name == RoleControlPlane && path == "controlplane" {
		minCount = 1
	}
	if v.required(path+".count") && p.Count < minCount {
		v.errf(path+".count", "must be at least %d, not %d", minCount, p.Count)
	}
	v.positive(path+".disk", p.Disk, true)
	v.maxUnavailable(p, path)
	v.hostnameLength(p, path)
	v.nonEmpty(path+".extensions", p.Extensions)
	switch provider {
	case ProviderOpenStack:
		if v.required(path+".flavor") && p.Flavor == "" {
			v.errf(path+".flavor", "must not be empty")
		}
		for _, k := range []string{"cores", "memory", "node"} {
			if v.has(path + "." + k) {
				v.warnf("%s.%s is ignored with openstack (it is a proxmox setting)", path, k)
			}
		}
	case ProviderProxmox:
		v.positive(path+".cores", p.Cores, true)
		v.positive(path+".memory", p.Memory, true)
		if v.has(path + ".flavor") {
			v.warnf("%s.flavor is ignored with proxmox (pools use cores and memory)", path)
		}
		nodes := v.c.Proxmox.Nodes
		if v.has(path+".node") && len(nodes) > 0 && !slices.Contains(nodes, p.Node) {
			v.errf(path+".node", "%q is not one of proxmox.nodes (%s)", p.Node, quoteList(nodes))
		}
	}
}

// positive checks an integer that must be > 0 (and is required if asked).
func (v *validator) positive(path string, val int, required bool) {
	if required && !v.required(path) || !v.has(path) {
		return
	}
	if val <= 0 {
		v.errf(path, "must be greater than 0, not %d", val)
	}
}

// maxUnavailable checks the upgrade parallelism of a pool: workers may
// take several nodes down at once; a control plane never does, since etcd
// keeps its quorum only when one member at a time is away.
func (v *validator) maxUnavailable(p *Pool, path string) {
	key := path + ".max_unavailable"
	if path == RoleControlPlane {
		if v.has(key) {
			v.errf(key, "is not allowed: control planes are always upgraded one at a time (etcd must keep its quorum); set max_unavailable on worker pools")
		}
		return
	}
	v.positive(key, p.MaxUnavailableNodes, false)
}

// hostnameLength keeps <name>-<pool>-NN within 63 characters, measured with
// the pool's widest ordinal (three digits from 100 machines on).
func (v *validator) hostnameLength(p *Pool, path string) {
	if p.Count < 1 || !isDNSLabel(v.c.Name) {
		return
	}
	h := Hostname(v.c.Name, p.Name, p.Count)
	if len(h) > maxHostname {
		v.errf(path, "would have the hostname %s, %d characters long; hostnames are limited to %d (shorten name or the pool name)",
			h, len(h), maxHostname)
	}
}
