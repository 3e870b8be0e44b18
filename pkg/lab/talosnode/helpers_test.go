package talosnode_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/labnet/labnettest"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

const (
	talos114 = "v1.14.1"
	talos113 = "v1.13.8"
	kubeVer  = "v1.36.1"
)

// clusterYAML is a Proxmox bridge cluster of 3 control planes and one
// worker on a loopback CIDR (%[1]s is the /24, %[2]s the VIP).
const clusterYAML = `name: lab
talos:
  version: %[3]s
kubernetes:
  version: v1.36.1
controlplane:
  count: 3
  cores: 2
  memory: 4
  disk: 20
workers:
  worker:
    count: 1
    cores: 2
    memory: 4
    disk: 20
proxmox:
  token_id: talosc@pve!provider
  token_secret: test-secret
  url: https://127.0.0.1:8006
  storage: local-lvm
  iso_storage: local
  network:
    cluster:
      bridge: vmbr0
network:
  cluster:
    cidr: %[1]s
    kubeapi_vip: %[2]s
  dns: []
  ntp: [pool.ntp.org]
`

// fixture is a generated cluster: real machine configs from
// machineconfig.Generate and the identity they came from.
type fixture struct {
	cluster  *config.Cluster
	id       *identity.Identity
	plan     *factory.InstallerPlan
	hosts    []config.Machine
	configs  map[string][]byte
	addrs    map[string]netip.Addr
	vip      netip.Addr
	talosVer string
}

// block picks a free 127.X.Y.0/24 for the test in this package's range
// (X in 100..249), room for 6 nodes.
func block(t *testing.T) netip.Prefix {
	t.Helper()
	return labnettest.Block(t, 6, func(seed, try uint32) netip.Prefix {
		v := seed + try*7919
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(100 + v%150), byte(v >> 8), 0}), 24)
	})
}

// newFixture generates the configs of a 3+1 cluster at a Talos version on
// a fresh loopback block.
func newFixture(t *testing.T, talosVer string) *fixture {
	t.Helper()
	p := block(t)
	vipB := p.Addr().As4()
	vipB[3] = 2
	vip := netip.AddrFrom4(vipB)
	dir := t.TempDir()
	text := fmt.Sprintf(clusterYAML, p, vip, talosVer)
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	id := loadIdentity(t, "talossecrets.yaml")
	plan, err := factory.Installers(c, factory.InstallerOptions{Host: "factory.talos.dev", Platform: "nocloud"})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{cluster: c, id: id, plan: plan, configs: map[string][]byte{}, addrs: map[string]netip.Addr{}, vip: vip, talosVer: talosVer}
	in := machineconfig.Input{Cluster: c, Secrets: id.Bundle(), AdvertisedAddress: vip.String(), VIP: vip, Installers: plan.ByPool}
	for i, m := range c.Hostnames() {
		cfg, err := machineconfig.Generate(in, machineconfig.Node{Machine: m, TalosVersion: talosVer, KubernetesVersion: kubeVer})
		if err != nil {
			t.Fatal(err)
		}
		fx.hosts = append(fx.hosts, m)
		fx.configs[m.Hostname] = cfg.Bytes()
		fx.addrs[m.Hostname] = labnettest.NodeAddr(p, i)
	}
	return fx
}

// loadIdentity loads a fixed cluster identity of no cluster from testdata
// (generating one costs an RSA-4096 key: seconds per test).
func loadIdentity(t *testing.T, name string) *identity.Identity {
	t.Helper()
	id, err := identity.Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// schematics is the fixture's Image Factory: its installers' schematics
// plus extra ones.
func (fx *fixture) schematics(extra ...factory.Schematic) talosnode.SchematicLookup {
	known := map[string][]talosnode.Extension{}
	add := func(s factory.Schematic) {
		id, _ := s.ID()
		var exts []talosnode.Extension
		for _, e := range s.Extensions() {
			exts = append(exts, talosnode.Extension{Name: e, Version: "1.0." + fmt.Sprint(len(e))})
		}
		known[id] = exts
	}
	for _, in := range fx.plan.Installers {
		add(in.Schematic)
	}
	for _, s := range extra {
		add(s)
	}
	return func(id string) ([]talosnode.Extension, bool) {
		e, ok := known[id]
		return e, ok
	}
}

// fastTiming is a lab measured in milliseconds.
func fastTiming() talosnode.Timing {
	return talosnode.Timing{
		Boot: 20 * time.Millisecond, Services: 40 * time.Millisecond, EtcdJoin: 20 * time.Millisecond,
		RebootDown: 80 * time.Millisecond, Install: 30 * time.Millisecond, Reset: 10 * time.Millisecond,
		HealthPoll: 10 * time.Millisecond, KubeletRestart: 30 * time.Millisecond, EtcdDial: 100 * time.Millisecond,
	}
}

// lab is a fleet running a fixture.
type lab struct {
	t     *testing.T
	fx    *fixture
	fleet *talosnode.Fleet
	rec   *labnet.Recorder
	nodes map[string]*talosnode.Node
}

// newLab starts a fleet (opts' zero fields get test defaults) without
// nodes.
func newLab(t *testing.T, fx *fixture, opts talosnode.Options) *lab {
	t.Helper()
	if opts.Recorder == nil {
		opts.Recorder = &labnet.Recorder{}
	}
	if opts.Timing == (talosnode.Timing{}) {
		opts.Timing = fastTiming()
	}
	if opts.Schematics == nil {
		opts.Schematics = fx.schematics()
	}
	f := talosnode.New(opts)
	t.Cleanup(func() { _ = f.Close() })
	return &lab{t: t, fx: fx, fleet: f, rec: opts.Recorder, nodes: map[string]*talosnode.Node{}}
}

// boot boots the named hosts (all when none) and waits for their apid.
func (l *lab) boot(hosts ...string) {
	l.t.Helper()
	if len(hosts) == 0 {
		for _, m := range l.fx.hosts {
			hosts = append(hosts, m.Hostname)
		}
	}
	for _, h := range hosts {
		n, err := l.fleet.Boot(l.fx.addrs[h], l.fx.configs[h], talosnode.Knobs{})
		if err != nil {
			l.t.Fatal(err)
		}
		l.nodes[h] = n
	}
	for _, h := range hosts {
		if err := l.nodes[h].WaitAPI(5 * time.Second * slow); err != nil {
			l.t.Fatal(err, l.nodes[h].Status().BootError)
		}
	}
}

// cp is control plane i (1-based) and w the worker.
func cp(i int) string { return fmt.Sprintf("lab-controlplane-%02d", i) }

const worker = "lab-worker-01"

// talosconfig is a talosconfig from the identity with endpoint host.
func (l *lab) talosconfig(host string) *clientconfig.Config {
	l.t.Helper()
	tc, err := identity.Talosconfig(l.fx.id, "lab", l.fx.addrs[host].String())
	if err != nil {
		l.t.Fatal(err)
	}
	return tc
}

// client is machinery's client with the fixture's talosconfig, talking to
// host; reconnects are fast so tests can follow reboots.
func (l *lab) client(host string) *client.Client {
	l.t.Helper()
	c, err := client.New(l.t.Context(), client.WithConfig(l.talosconfig(host)), fastReconnect())
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientAs is client with a certificate of the identity's CA for roles
// only (client's is os:admin).
func (l *lab) clientAs(host string, roles ...role.Role) *client.Client {
	l.t.Helper()
	crt, err := l.fx.id.Bundle().GenerateTalosAPIClientCertificate(role.MakeSet(roles...))
	if err != nil {
		l.t.Fatal(err)
	}
	tc := l.talosconfig(host)
	tc.Contexts[tc.Context].Crt = b64(crt.Crt)
	tc.Contexts[tc.Context].Key = b64(crt.Key)
	c, err := client.New(l.t.Context(), client.WithConfig(tc), fastReconnect())
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = c.Close() })
	return c
}

// fastReconnect keeps gRPC's reconnect backoff short.
func fastReconnect() client.OptionFunc {
	return client.WithGRPCDialOptions(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.5, MaxDelay: 50 * time.Millisecond},
		MinConnectTimeout: time.Second * slow,
	}))
}

// ctx is a test context with a deadline.
func ctx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), d*slow)
	t.Cleanup(cancel)
	return c
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second * slow)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bootstrapped boots the whole fixture, bootstraps cp-01 and waits for
// the three control planes to be started etcd members.
func (l *lab) bootstrapped() {
	l.t.Helper()
	l.boot()
	c := l.client(cp(1))
	eventually(l.t, "bootstrap", func() bool {
		err := c.Bootstrap(l.t.Context(), &machine.BootstrapRequest{})
		return err == nil
	})
	eventually(l.t, "3 started etcd members", func() bool { return l.startedMembers() == 3 })
}

// startedMembers counts started etcd members of the cluster.
func (l *lab) startedMembers() int {
	cl := l.nodes[cp(1)].Cluster()
	if cl == nil {
		return 0
	}
	n := 0
	for _, m := range cl.EtcdMembers() {
		if m.Hostname != "" && !m.Learner {
			n++
		}
	}
	return n
}

// contains reports whether s contains sub, for error checks.
func contains(err error, sub string) bool {
	return err != nil && strings.Contains(err.Error(), sub)
}

// b64 is standard base64, as talosconfig stores PEM.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// waitReboot waits until host booted again after boots boots, apid up.
func (l *lab) waitReboot(host string, boots int) {
	l.t.Helper()
	eventually(l.t, host+" rebooted", func() bool {
		st := l.nodes[host].Status()
		return st.Boots > boots && st.APIUp
	})
}
