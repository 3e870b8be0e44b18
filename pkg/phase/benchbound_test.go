package phase_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// labWork is what a converge on the lab has to wait for, read from the
// lab's own settings and never from talosc's calls: the latency added to
// every call, the Talos nodes' timing, how long a Proxmox task runs, and
// how long the cluster's real kube-apiserver took to start (the one fixed
// time the lab measures instead of configuring).
type labWork struct {
	latency        time.Duration
	node           talosnode.Timing
	pveTask        time.Duration
	apiServerStart time.Duration
}

// step is one operation a converge cannot skip: calls round trips at the
// injected latency plus fixed time the lab spends on its own; or, with
// parallel set, branches that can run at the same time, of which only the
// longest counts.
type step struct {
	name     string
	calls    int
	fixed    time.Duration
	parallel [][]step
}

// cost is how long s takes at least when every call takes latency.
func (s step) cost(latency time.Duration) time.Duration {
	if s.parallel != nil {
		var longest time.Duration
		for _, branch := range s.parallel {
			longest = max(longest, chainCost(branch, latency))
		}
		return longest
	}
	return time.Duration(s.calls)*latency + s.fixed
}

// describeChain lists chain's steps with their costs at latency.
func describeChain(chain []step, latency time.Duration) string {
	parts := make([]string, len(chain))
	for i, s := range chain {
		parts[i] = fmt.Sprintf("%s %s", s.name, s.cost(latency))
	}
	return strings.Join(parts, ", ")
}

func chainCost(chain []step, latency time.Duration) time.Duration {
	var total time.Duration
	for _, s := range chain {
		total += s.cost(latency)
	}
	return total
}

// convergeChain is the longest chain of dependent operations a converge
// from nothing needs on provider, whatever the number of machines: a
// fan-out over the machines (create every server, boot every node)
// counts once. Polls count one round trip, reads and tags none.
func convergeChain(provider string, w labWork) []step {
	if provider == lab.ProviderProxmox {
		return proxmoxChain(w)
	}
	return openStackChain(w)
}

// convergeBound is the converge's lower bound on provider: convergeChain
// at w's latency. It does not grow with the machines, nor with the calls
// talosc makes.
func convergeBound(provider string, w labWork) time.Duration {
	return chainCost(convergeChain(provider, w), w.latency)
}

// openStackChain: a token; then the Glance image (register the schematic,
// create the image, fetch it from the Image Factory, upload it) beside the
// network (network then subnet, beside the security group then its rules;
// then the port); the server; the boot. The image carries the base
// schematic and every pool's installer another (no Tailscale without a
// tailscale section), so each node is reinstalled: an upgrade (the
// install) and its reboot, all nodes at once before the bootstrap (no etcd
// quorum to keep yet). Then the services, the bootstrap, the kube-apiserver
// start (beside the other control planes joining etcd) and the one read
// that sees every Node Ready.
func openStackChain(w labWork) []step {
	return []step{
		{name: "keystone token", calls: 1},
		{name: "image and network", parallel: [][]step{
			{{name: "image", calls: 4}},
			{
				{name: "network and security group", parallel: [][]step{
					{{name: "network", calls: 1}, {name: "subnet", calls: 1}},
					{{name: "security group", calls: 1}, {name: "rules", calls: 1}},
				}},
				{name: "port", calls: 1},
			},
		}},
		{name: "server", calls: 1},
		{name: "boot", fixed: w.node.Boot},
		{name: "reinstall", calls: 2, fixed: w.node.Install + w.node.RebootDown},
		{name: "services", fixed: w.node.Services},
		{name: "bootstrap", calls: 1},
		{name: "kube-apiserver", fixed: max(w.apiServerStart, w.node.EtcdJoin)},
		{name: "nodes ready", calls: 1},
	}
}

// proxmoxChain: the boot ISO (register the schematic, then a download
// task), beside each VM's cidata ISO (an upload task) and the resource
// pool; the VM (a create task); its firewall (options, then the rules)
// before it runs; the start task; the boot; then as on OpenStack, without
// the reinstall (the ISO installs the pool's installer at first boot).
// A task is done no sooner than it runs, nor than one poll sees it.
func proxmoxChain(w labWork) []step {
	task := max(w.pveTask, w.latency)
	return []step{
		{name: "ISOs and pool", parallel: [][]step{
			{{name: "schematic", calls: 1}, {name: "boot ISO download", calls: 1, fixed: task}},
			{{name: "cidata ISO upload", calls: 1, fixed: task}},
			{{name: "resource pool", calls: 1}},
		}},
		{name: "VM", calls: 1, fixed: task},
		{name: "firewall", calls: 2},
		{name: "start", calls: 1, fixed: task},
		{name: "boot", fixed: w.node.Boot},
		{name: "services", fixed: w.node.Services},
		{name: "bootstrap", calls: 1},
		{name: "kube-apiserver", fixed: max(w.apiServerStart, w.node.EtcdJoin)},
		{name: "nodes ready", calls: 1},
	}
}

func TestConvergeBound(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	bench := labWork{
		latency:        ms(50),
		node:           talosnode.Timing{Boot: ms(5000), Services: ms(500), EtcdJoin: ms(500), RebootDown: ms(2000), Install: ms(1000)},
		pveTask:        ms(20),
		apiServerStart: ms(3000),
	}
	slowTasks, noLatency, slowEtcd := bench, bench, bench
	slowTasks.pveTask = ms(200)
	noLatency.latency = 0
	slowEtcd.node.EtcdJoin = ms(4000)
	for _, tc := range []struct {
		name     string
		provider string
		work     labWork
		want     time.Duration
	}{
		// 10 round trips (token, the image's 4, server, upgrade, reboot,
		// bootstrap, ready) + boot, install, reboot, services, apiserver
		{"openstack bench lab", lab.ProviderOpenStack, bench, ms(500 + 5000 + 1000 + 2000 + 500 + 3000)},
		{"openstack no latency", lab.ProviderOpenStack, noLatency, ms(5000 + 1000 + 2000 + 500 + 3000)},
		{"openstack etcd join longer than the apiserver", lab.ProviderOpenStack, slowEtcd, ms(500 + 5000 + 1000 + 2000 + 500 + 4000)},
		// schematic, download, its poll; create, poll; 2 firewall; start,
		// poll; bootstrap; ready: 11 round trips + boot, services, apiserver
		{"proxmox bench lab", lab.ProviderProxmox, bench, ms(550 + 5000 + 500 + 3000)},
		// three tasks of 200 ms instead of their 50 ms polls
		{"proxmox slow tasks", lab.ProviderProxmox, slowTasks, ms(550 + 3*150 + 5000 + 500 + 3000)},
		{"proxmox no latency", lab.ProviderProxmox, noLatency, ms(3*20 + 5000 + 500 + 3000)},
	} {
		if got := convergeBound(tc.provider, tc.work); got != tc.want {
			t.Errorf("%s: bound %s, want %s (%s)", tc.name, got, tc.want, describeChain(convergeChain(tc.provider, tc.work), tc.work.latency))
		}
	}
}
