package talosapi_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const (
	talosVersion = "v1.14.1"
	talos113     = "v1.13.8"
	cp1          = "lab-controlplane-01"
	cp2          = "lab-controlplane-02"
	worker1      = "lab-worker-01"
)

// clusterYAML is a Proxmox bridge cluster of Talos %[5]s on a loopback /24
// (%[1]s), its VIP (%[2]s), %[3]d control planes and %[4]d workers.
const clusterYAML = `name: lab
talos: {version: %[5]s}
kubernetes: {version: v1.36.1}
controlplane: {count: %[3]d, cores: 2, memory: 4, disk: 20}
workers:
  worker: {count: %[4]d, cores: 2, memory: 4, disk: 20}
proxmox:
  token_id: talosc@pve!provider
  token_secret: test-secret
  url: https://127.0.0.1:8006
  storage: local-lvm
  iso_storage: local
  network: {cluster: {bridge: vmbr0}}
network:
  cluster: {cidr: %[1]s, kubeapi_vip: %[2]s}
  dns: []
  ntp: [pool.ntp.org]
`

// cluster is a generated cluster on its own loopback block: the machine
// configs talosc would deliver, the identity they came from, a fleet to
// boot them on.
type cluster struct {
	t       *testing.T
	id      *identity.Identity
	vip     netip.Addr
	configs map[string][]byte
	addrs   map[string]netip.Addr
	fleet   *talosnode.Fleet
	rec     *labnet.Recorder
	nodes   map[string]*talosnode.Node
}

// newCluster generates the configs of a Talos 1.14 cluster of cps control
// planes and workers workers and starts an empty fleet with opts (fast
// timing unless given).
func newCluster(t *testing.T, cps, workers int, opts talosnode.Options) *cluster {
	t.Helper()
	return newClusterAt(t, talosVersion, cps, workers, opts)
}

// newClusterAt is newCluster at a Talos version.
func newClusterAt(t *testing.T, version string, cps, workers int, opts talosnode.Options) *cluster {
	t.Helper()
	p := block(t)
	vipB := p.Addr().As4()
	vipB[3] = 2
	vip := netip.AddrFrom4(vipB)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), fmt.Appendf(nil, clusterYAML, p, vip, cps, workers, version), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.Load(filepath.Join("..", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := factory.Installers(cfg, factory.InstallerOptions{Host: "factory.talos.dev", Platform: "nocloud"})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, id: id, vip: vip, configs: map[string][]byte{}, addrs: map[string]netip.Addr{}, nodes: map[string]*talosnode.Node{}}
	in := machineconfig.Input{Cluster: cfg, Secrets: id.Bundle(), AdvertisedAddress: vip.String(), VIP: vip, Installers: plan.ByPool}
	for i, m := range cfg.Hostnames() {
		mc, err := machineconfig.Generate(in, machineconfig.Node{Machine: m, TalosVersion: version, KubernetesVersion: "v1.36.1"})
		if err != nil {
			t.Fatal(err)
		}
		c.configs[m.Hostname] = mc.Bytes()
		c.addrs[m.Hostname] = labnettest.NodeAddr(p, i)
	}
	if opts.Recorder == nil {
		opts.Recorder = &labnet.Recorder{}
	}
	if opts.Timing == (talosnode.Timing{}) {
		opts.Timing = talosnode.Timing{
			Boot: 20 * time.Millisecond, Services: 40 * time.Millisecond, EtcdJoin: 20 * time.Millisecond,
			RebootDown: 80 * time.Millisecond, Install: 30 * time.Millisecond, Reset: 10 * time.Millisecond,
			HealthPoll: 10 * time.Millisecond,
		}
	}
	c.rec = opts.Recorder
	c.fleet = talosnode.New(opts)
	t.Cleanup(func() { _ = c.fleet.Close() })
	return c
}

// boot powers host on with knobs (apid comes up after Timing.Boot).
func (c *cluster) boot(host string, knobs talosnode.Knobs) {
	c.t.Helper()
	n, err := c.fleet.Boot(c.addrs[host], c.configs[host], knobs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[host] = n
}

// addr is host's address as talosc passes it.
func (c *cluster) addr(host string) string { return c.addrs[host].String() }

// dial is a client talking to host's apid, with fast reconnects and
// retries; o's zero fields get test values.
func (c *cluster) dial(host string, o talosapi.Options) *talosapi.Client {
	c.t.Helper()
	return c.dialEndpoint(c.addr(host), o)
}

// dialEndpoint is dial to an endpoint (address:port).
func (c *cluster) dialEndpoint(endpoint string, o talosapi.Options) *talosapi.Client {
	c.t.Helper()
	if o.CallTimeout == 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.MaxReconnectDelay == 0 {
		o.MaxReconnectDelay = 20 * time.Millisecond
	}
	if o.RetryInterval == 0 {
		o.RetryInterval = 20 * time.Millisecond
	}
	cl, err := talosapi.Dial(c.t.Context(), c.id, "lab", endpoint, o)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// bootstraps counts the recorded Bootstrap calls answered with code.
func (c *cluster) bootstraps(code codes.Code) int {
	return c.calls("/machine.MachineService/Bootstrap?", code)
}

// calls counts the recorded calls of a method ("/…/Name?") answered with
// code.
func (c *cluster) calls(method string, code codes.Code) int {
	n := 0
	for _, call := range c.rec.Calls() {
		if call.Service == talosnode.ServiceName && call.Status == int(code) && strings.HasPrefix(call.Path, method) {
			n++
		}
	}
	return n
}

// block picks a free 127.61.X.0/24 for the test (this package's range),
// room for 4 nodes.
func block(t *testing.T) netip.Prefix {
	t.Helper()
	return labnettest.Block(t, 4, func(seed, try uint32) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 61, byte(seed + try*31), 0}), 24)
	})
}
