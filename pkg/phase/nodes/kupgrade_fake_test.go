package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	"k8s.io/client-go/rest"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/talos/talosapi"
	"github.com/talosc/talosc/pkg/ui"
)

// kubeUpgradeYAML is a cluster of 3 control planes and 2 workers at
// Kubernetes %s.
const kubeUpgradeYAML = `name: t
talos:
  version: v1.14.1
kubernetes:
  version: %s
controlplane:
  count: 3
  flavor: m1.medium
  disk: 40
workers:
  worker:
    count: 2
    flavor: m1.large
    disk: 40
openstack:
  url: https://keystone.example.edu:5000/v3/
  availability_zone: nova
  external_net: ext-net
  credential_id: test-id
  credential_secret: test-secret
network:
  cluster:
    cidr: 192.168.0.0/21
  dns: [127.0.0.53]
  ntp: [127.0.0.123]
`

// kubeReleases are the kubelet tags the fake registry lists.
var kubeReleases = []string{"v1.34.3", "v1.35.0", "v1.35.4", "v1.36.0", "v1.36.1", "v1.37.0-alpha.1"}

// kubeFake is a cluster as a Kubernetes upgrade sees it: Talos nodes whose
// running configurations are generated ones, and a Kubernetes API whose
// mirror pods, Nodes and /version follow the applied configurations (as
// the lab's do). It logs every mutation.
type kubeFake struct {
	talosAPI
	kubeAPI
	mu    sync.Mutex
	nodes map[string]*fakeKubeNode // by address
	cosi  state.State
	// log has one line per apply ("apply <host> <component>=<tag>" for
	// each component it changed) and per object applied.
	log   []string
	pulls []string
	// versionErr fails ServerVersion; neverReady is "<host> <component>"
	// whose mirror pod never turns Ready.
	versionErr error
	neverReady string
	// unstable: the API never answers twice in a row.
	unstable bool
	probes   int
}

type fakeKubeNode struct {
	host, address string
	controlPlane  bool
	config        []byte
	images        machineconfig.KubernetesImages
	// configVersion is each static pod's configuration version.
	configVersion map[string]uint64
}

// newKubeFake is a dry or real run of the 3+2 cluster pinned at target,
// each node running the images initial gives it, and the fake behind it.
func newKubeFake(t *testing.T, dryRun bool, target string, initial func(m config.Machine) machineconfig.KubernetesImages) (*run, *kubeFake) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), fmt.Appendf(nil, kubeUpgradeYAML, target), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v2/siderolabs/kubelet/tags/list" {
			http.NotFound(w, req)
			return
		}
		_, _ = fmt.Fprintf(w, `{"tags": ["%s"]}`, strings.Join(kubeReleases, `","`))
	}))
	t.Cleanup(registry.Close)
	cfg.Talos.ImageFactory = &config.Source{URL: "http://127.0.0.1:1", AllowHTTP: true}
	cfg.Kubernetes.KubeletRepository = &config.Source{URL: registry.URL + "/siderolabs/kubelet", AllowHTTP: true}
	env, err := phase.NewEnv(func(k string) (string, bool) { return "0.001", k == phase.EnvTimeScale }, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := identity.Ensure(t.Context(), dir, cfg.Talos.Version, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	in := &phase.Input{Config: cfg, DryRun: dryRun, Out: ui.New(io.Discard, nil), Env: env}
	r := &run{in: in, cfg: cfg, cloud: projectless{}, plan: &provider.Plan{DryRun: dryRun}, desired: cfg.Hostnames(), id: id}
	f := &kubeFake{nodes: map[string]*fakeKubeNode{}, cosi: state.WrapCore(namespaced.NewState(inmem.Build))}
	r.clients = newClients(cfg, seams{
		dialTalos: func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return f, nil },
		openKube:  func(string) (kubeAPI, error) { return f, nil },
	})
	vip := netip.MustParseAddr("127.0.0.100")
	net := &provider.NetworkResult{Kubernetes: provider.Endpoint{VIP: vip, Advertised: vip.String()}}
	inv := &provider.Inventory{}
	for i, m := range r.desired {
		addr := netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)})
		net.Machines = append(net.Machines, provider.MachineAddress{Hostname: m.Hostname, Address: addr})
		inv.Machines = append(inv.Machines, provider.Machine{Hostname: m.Hostname, Address: addr})
	}
	r.obs = newObserved(inv, net, provider.Image{}, nil)
	input, _, err := r.configInput()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range r.desired {
		addr := net.Machines[i].Address
		images := initial(m)
		mc, err := r.generate(input, m, images)
		if err != nil {
			t.Fatal(err)
		}
		f.nodes[addr.String()] = &fakeKubeNode{
			host: m.Hostname, address: addr.String(), controlPlane: m.Role == config.RoleControlPlane,
			config: mc.Bytes(), images: images, configVersion: map[string]uint64{},
		}
	}
	r.out.Up = true
	nodes, _ := f.Nodes(t.Context())
	r.obs = newObserved(inv, net, provider.Image{}, nodes)
	return r, f
}

// projectless is a cloud of no project (the configuration input asks).
type projectless struct{ provider.Cloud }

func (projectless) Project() string { return "" }

// at is every component at version on m.
func at(version string) func(m config.Machine) machineconfig.KubernetesImages {
	return func(m config.Machine) machineconfig.KubernetesImages {
		return machineconfig.DefaultImages(version, m.Role == config.RoleControlPlane)
	}
}

func (f *kubeFake) node(addr string) (*fakeKubeNode, error) {
	n, ok := f.nodes[addr]
	if !ok {
		return nil, fmt.Errorf("no node at %s", addr)
	}
	return n, nil
}

func (f *kubeFake) Close() error { return nil }

func (f *kubeFake) COSI() state.State { return f.cosi }

func (f *kubeFake) MachineConfig(_ context.Context, addr string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.node(addr)
	if err != nil {
		return nil, err
	}
	return n.config, nil
}

// ApplyConfiguration takes the configuration's images live, as Talos 1.14
// does: each changed static pod's configuration version grows.
func (f *kubeFake) ApplyConfiguration(_ context.Context, addr string, data []byte, dryRun bool) (talosapi.ApplyResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.node(addr)
	if err != nil || dryRun {
		return talosapi.ApplyResult{}, err
	}
	images, err := machineconfig.RunningImages(data)
	if err != nil {
		return talosapi.ApplyResult{}, err
	}
	line := "apply " + n.host
	for _, c := range kubeupgrade.Components() {
		before, after := *c.Image(&n.images), *c.Image(&images)
		if before != after {
			line += fmt.Sprintf(" %s=%s", c, after[strings.LastIndex(after, ":")+1:])
			n.configVersion[string(c)]++
		}
	}
	f.log = append(f.log, line)
	n.config, n.images = data, images
	return talosapi.ApplyResult{Mode: "NO_REBOOT"}, nil
}

func (f *kubeFake) PullImage(_ context.Context, addr, ref string, system bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, fmt.Sprintf("%s %s %v", f.nodes[addr].host, ref, system))
	return nil
}

func (f *kubeFake) ConfigVersion(_ context.Context, addr, component string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.node(addr)
	if err != nil {
		return 0, err
	}
	return n.configVersion[component], nil
}

// Manifests are a DaemonSet and a ConfigMap, in that order.
func (f *kubeFake) Manifests(context.Context, string) ([]map[string]any, error) {
	return []map[string]any{
		{"kind": "DaemonSet", "metadata": map[string]any{"namespace": "kube-system", "name": "kube-proxy"}},
		{"kind": "ConfigMap", "metadata": map[string]any{"namespace": "kube-system", "name": "coredns"}},
	}, nil
}

func (f *kubeFake) Apply(_ context.Context, obj map[string]any, fieldManager string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("%s %v %s", fieldManager, obj["kind"], kubeupgrade.ObjectName(obj)))
	return nil
}

func (f *kubeFake) RESTConfig() *rest.Config { return nil }

// Probe answers every other time when unstable.
func (f *kubeFake) Probe(context.Context, int, time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	if f.unstable && f.probes%2 == 0 {
		return false, errors.New("connection refused")
	}
	return true, nil
}

// ServerVersion is the first control plane's API server's.
func (f *kubeFake) ServerVersion(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.versionErr != nil {
		return "", f.versionErr
	}
	n := f.nodes["127.0.0.10"]
	return n.images.APIServer[strings.LastIndex(n.images.APIServer, ":")+1:], nil
}

func (f *kubeFake) Nodes(context.Context) ([]kube.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kube.Node
	for _, n := range f.nodes {
		k := n.images.Kubelet
		out = append(out, kube.Node{Name: n.host, Ready: true, InternalIP: n.address, KubeletVersion: k[strings.LastIndex(k, ":")+1:]})
	}
	return out, nil
}

func (f *kubeFake) StaticPods(_ context.Context, component string) ([]kube.StaticPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := kubeupgrade.Component(component)
	if !c.StaticPod() {
		return nil, errors.New("not a static pod")
	}
	var out []kube.StaticPod
	for _, n := range f.nodes {
		if n.controlPlane {
			out = append(out, kube.StaticPod{
				Name: component + "-" + n.host, Node: n.host, HostIP: n.address, Image: *c.Image(&n.images),
				ConfigVersion: strconv.FormatUint(n.configVersion[component], 10), Ready: f.neverReady != n.host+" "+component,
			})
		}
	}
	return out, nil
}

// runningVersions are every node's component tags.
func (f *kubeFake) runningVersions() map[string]map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]string{}
	for _, n := range f.nodes {
		out[n.host] = n.images.Tags()
	}
	return out
}
