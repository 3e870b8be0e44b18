package phase_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcimage"
	"github.com/talosc/talosc/pkg/cmd/tcnet"
	"github.com/talosc/talosc/pkg/cmd/tcnodes"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	labpve "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/bootimage"
	"github.com/talosc/talosc/pkg/phase/network"
	"github.com/talosc/talosc/pkg/phase/nodes"
	"github.com/talosc/talosc/pkg/phase/preflight"
)

// The lab the phase benchmarks run on: every endpoint answers after 50 ms
// and a node boots in 5 s. The time scale turns the phases' 15 s polls
// into 0.75 s ones, fine-grained enough next to a 5 s boot for the wall
// time's ratio to the converge's lower bound to mean something.
const (
	benchLatency   = 50 * time.Millisecond
	benchNodesBoot = 5 * time.Second
	benchTimeScale = 0.05
	benchCluster   = "bench"
)

// benchSize is the shape of a benchmarked cluster.
type benchSize struct {
	name                   string
	controlPlanes, workers int
}

// skipWithoutAPIServer skips b where the lab cannot run Kubernetes.
func skipWithoutAPIServer(b *testing.B) {
	b.Helper()
	if os.Getenv("TALOSC_KUBE_APISERVER") == "" {
		b.Skip("needs TALOSC_KUBE_APISERVER (make kube-apiserver)")
	}
}

// labCluster is a fresh lab and a cluster directory written for it.
type labCluster struct {
	lab *lab.Lab
	dir string
	env map[string]string
}

// startLabCluster starts a lab simulating provider (lab.ProviderOpenStack
// or lab.ProviderProxmox) and writes a cluster directory with size's
// machines. An OpenStack lab's cluster and external networks are
// 127.17.seq.0/24 and 127.204.seq.0/24 (labs that have not quite let go of
// their loopback addresses never collide with the next one, nor with the
// lab package's tests running in parallel); a Proxmox lab's bridge subnet
// is fixed (127.20.0.0/24), so its labs run one after the other.
func startLabCluster(b *testing.B, provider string, seq int, size benchSize) *labCluster {
	b.Helper()
	l, err := lab.Start(b.Context(), lab.Options{
		Provider:     provider,
		NodesBoot:    benchNodesBoot,
		Knobs:        labnet.Knobs{Latency: benchLatency},
		ClusterCIDR:  fmt.Sprintf("127.17.%d.0/24", seq%256),
		ExternalCIDR: fmt.Sprintf("127.204.%d.0/24", seq%256),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() }) // a no-op once the benchmark closed it
	c := &labCluster{lab: l, dir: b.TempDir(), env: map[string]string{
		phase.EnvTimeScale: fmt.Sprint(benchTimeScale),
	}}
	if _, err := l.WriteClusterDir(c.dir, benchCluster); err != nil {
		b.Fatal(err)
	}
	c.resize(b, provider, size)
	l.Recorder().Reset()
	return c
}

// work is what a converge on c's lab waits for (see labWork): the latency
// and the node timing the lab was started with, its Proxmox tasks' run
// time, and the start of the cluster's kube-apiserver, which the lab
// recorded as its own work; a converge that started none fails b.
func (c *labCluster) work(b *testing.B) labWork {
	b.Helper()
	w := labWork{latency: benchLatency, node: c.lab.NodeTiming(), pveTask: labpve.DefaultTaskDuration}
	for _, s := range c.lab.Recorder().WorkSpans() {
		if s.Service == kubeapi.Service && s.Path == "start "+benchCluster {
			w.apiServerStart = s.Duration
		}
	}
	if w.apiServerStart == 0 {
		b.Fatalf("the lab recorded no start of %s's kube-apiserver: no bound without it", benchCluster)
	}
	return w
}

// edit replaces old, which must be there, in cluster.yaml.
func (c *labCluster) edit(b *testing.B, old, replacement string) {
	b.Helper()
	path := filepath.Join(c.dir, "cluster.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		b.Fatalf("cluster.yaml holds no %q:\n%s", old, data)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, replacement, 1)), 0o600); err != nil {
		b.Fatal(err)
	}
}

// resize sets the machine counts of the cluster.yaml the lab wrote (3
// control planes and one "worker" pool of 2); on Proxmox it also shrinks
// the machines' memory (2 GB control planes, 1 GB workers) so that 50 of
// them fit the lab's one node.
func (c *labCluster) resize(b *testing.B, provider string, size benchSize) {
	b.Helper()
	path := filepath.Join(c.dir, "cluster.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	counts := []struct{ old, new string }{
		{"  count: 3\n  flavor: talos.cp\n", fmt.Sprintf("  count: %d\n  flavor: talos.cp\n", size.controlPlanes)},
		{"    count: 2\n    flavor: talos.worker\n", fmt.Sprintf("    count: %d\n    flavor: talos.worker\n", size.workers)},
	}
	if provider == lab.ProviderProxmox {
		counts = []struct{ old, new string }{
			{"controlplane: {count: 3, cores: 2, memory: 4,", fmt.Sprintf("controlplane: {count: %d, cores: 2, memory: 2,", size.controlPlanes)},
			{"  worker: {count: 2, cores: 2, memory: 4,", fmt.Sprintf("  worker: {count: %d, cores: 2, memory: 1,", size.workers)},
		}
	}
	for _, r := range counts {
		if !strings.Contains(text, r.old) {
			b.Fatalf("the lab's cluster.yaml no longer holds %q:\n%s", r.old, text)
		}
		text = strings.Replace(text, r.old, r.new, 1)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
}

// close stops the lab, failing b if it does not stop cleanly.
func (c *labCluster) close(b *testing.B) {
	b.Helper()
	if err := c.lab.Close(); err != nil {
		b.Error(err)
	}
}

// lookupEnv is the phases' whole environment: nothing of the host leaks in
// (no PATH, so no tc-* plugin on it adds configuration sections).
func (c *labCluster) lookupEnv(key string) (string, bool) {
	v, ok := c.env[key]
	return v, ok
}

// builtinPhase is a phase binary's constructor and the phase it wires.
// The pair is spelled out because the run seam (runF) is the only way to
// hand a phase its environment without the process's (b.Setenv), and runF
// must call Options.Run with the phase itself.
type builtinPhase struct {
	newCommand func(cli.Streams, func(context.Context, *phase.Options, string) error) *cobra.Command
	phase      phase.Phase
}

// builtinPhases are the phase binaries in converge order, headed by the
// validation (tc-nodes validate).
func builtinPhases() []builtinPhase {
	return []builtinPhase{
		{tcnodes.NewCommand, preflight.WithValidation(nodes.Phase{})},
		{tcimage.NewCommand, bootimage.Phase{}},
		{tcnet.NewCommand, network.Phase{}},
		{tcnodes.NewCommand, nodes.Phase{}},
	}
}

// run runs action (plan or converge) through every phase in order, in
// process, each phase reading the previous one's stdout, as "tc-nodes
// validate | tc-image ACTION | tc-net ACTION | tc-nodes ACTION" would. It
// fails b with the failing phase's stderr. With -v it logs every phase's
// stderr.
func (c *labCluster) run(b *testing.B, action string, flags ...string) {
	b.Helper()
	var doc []byte
	for _, p := range builtinPhases() {
		args := append([]string{action}, flags...)
		if _, head := p.phase.(phase.Validator); head {
			args = phase.ValidateArgs(action, flags)
		}
		doc = c.runPhase(b, p, doc, args)
	}
}

// runPhase runs p with args (the action first) in process, doc on its
// stdin, and returns its stdout; it fails b with p's stderr.
func (c *labCluster) runPhase(b *testing.B, p builtinPhase, doc []byte, args []string) []byte {
	b.Helper()
	var stdout, stderr bytes.Buffer
	root := p.newCommand(cli.Streams{In: bytes.NewReader(doc), Out: &stdout, ErrOut: &stderr},
		func(ctx context.Context, o *phase.Options, action string) error {
			o.LookupEnv = c.lookupEnv
			return o.Run(ctx, p.phase, action)
		})
	root.SetArgs(append(args, "-C", c.dir))
	start := time.Now()
	err := root.ExecuteContext(b.Context())
	if testing.Verbose() {
		b.Logf("tc-%s %s took %s; stderr:\n%s", p.phase.Name(), args[0], time.Since(start).Round(time.Millisecond), stderr.String())
	}
	if err != nil {
		b.Fatalf("tc-%s %s: %v\nstderr:\n%s", p.phase.Name(), args[0], err, stderr.String())
	}
	return stdout.Bytes()
}

// callCounts are the calls the lab answered, by what answered them.
type callCounts struct {
	openstack, proxmox, talos, kubernetes, imageFactory int
	// openstackMutations are OpenStack calls that could change something,
	// Keystone's token requests excepted; proxmoxMutations likewise.
	openstackMutations, proxmoxMutations int
}

func countCalls(calls []labnet.Call) callCounts {
	var n callCounts
	for _, c := range calls {
		switch c.Service {
		case labos.Keystone, labos.Nova, labos.Neutron, labos.Glance, labos.Cinder:
			n.openstack++
			if c.Mutating() && c.Service != labos.Keystone {
				n.openstackMutations++
			}
		case labpve.Service:
			n.proxmox++
			if c.Mutating() {
				n.proxmoxMutations++
			}
		case "talos": // talosnode records its gRPC calls under this name
			n.talos++
		case kubeapi.Service:
			n.kubernetes++
		case imagefactory.Service:
			n.imageFactory++
		}
	}
	return n
}

// report reports n divided by ops, per op, the cloud's calls for provider.
func (n callCounts) report(b *testing.B, provider string, ops int) {
	b.Helper()
	per := func(v int) float64 { return float64(v) / float64(ops) }
	if provider == lab.ProviderProxmox {
		b.ReportMetric(per(n.proxmox), "proxmox-calls/op")
		b.ReportMetric(per(n.proxmoxMutations), "proxmox-mutations/op")
	} else {
		b.ReportMetric(per(n.openstack), "openstack-calls/op")
		b.ReportMetric(per(n.openstackMutations), "openstack-mutations/op")
	}
	b.ReportMetric(per(n.talos), "talos-calls/op")
	b.ReportMetric(per(n.kubernetes), "kube-calls/op")
	b.ReportMetric(per(n.imageFactory), "factory-calls/op")
}

func (n *callCounts) add(m callCounts) {
	n.openstack += m.openstack
	n.openstackMutations += m.openstackMutations
	n.proxmox += m.proxmox
	n.proxmoxMutations += m.proxmoxMutations
	n.talos += m.talos
	n.kubernetes += m.kubernetes
	n.imageFactory += m.imageFactory
}
