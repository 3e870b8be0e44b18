package config_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/config"
)

// openstackBase is a minimal valid OpenStack cluster.yaml.
const openstackBase = `name: demo
talos:
  version: v1.13.8
kubernetes:
  version: v1.36.1
controlplane:
  count: 3
  flavor: m1.medium
  disk: 40
workers:
  worker:
    count: 2
    flavor: m1.large
    disk: 100
openstack:
  url: https://keystone.example.edu:5000/v3/
  availability_zone: nova
  external_net: ext-net
network:
  cluster:
    cidr: 192.168.0.0/21
  dns: [8.8.8.8]
  ntp: [pool.ntp.org]
`

// proxmoxBase is a minimal valid Proxmox (bridge) cluster.yaml.
const proxmoxBase = `name: demo
talos:
  version: v1.13.8
kubernetes:
  version: v1.36.1
controlplane:
  count: 3
  cores: 4
  memory: 8
  disk: 40
workers:
  worker:
    count: 2
    cores: 8
    memory: 16
    disk: 100
proxmox:
  url: https://pve.example.edu:8006
  storage: local-lvm
  iso_storage: local
  network:
    cluster:
      bridge: vmbr0
network:
  cluster:
    cidr: 192.168.0.0/21
    kubeapi_vip: 192.168.0.2
  dns: []
  ntp: [pool.ntp.org]
`

// sdnExample is spec §2.5.3 (Proxmox, routed external NIC, managed SDN)
// completed with the general keys and pools.
const sdnExample = `name: mycluster
talos:
  version: v1.13.8
kubernetes:
  version: v1.36.1
controlplane: {count: 3, cores: 4, memory: 8, disk: 40}
workers:
  worker: {count: 3, cores: 8, memory: 16, disk: 100}
  gpu: {count: 1, cores: 16, memory: 64, disk: 200, node: pve002}
proxmox:
  url: https://pve.example.edu:8006
  storage: vms
  iso_storage: isos
  cidata_storage: local
  nodes: [pve001, pve002, pve003]
  tls_verify: true
  network:
    cluster:
      sdn:                       # every field optional
        name: mycl
        asn: 65000
        exit_nodes: [pve001, pve003]
        primary_exit_node: pve001
        mtu: 8950
    external:
      bridge: vmbr1
network:
  cluster:
    cidr: 192.168.100.0/24       # gw .1, cp-01 .11, first worker .61, 50-address pool blocks
    mtu: 1500
  external:
    cidr: 203.0.113.0/25
    gateway: 203.0.113.1
    vlan: 100
    anchor_cidr: 169.254.32.0/20
    kubeapi_vip: 203.0.113.79
    ingress_pool: 203.0.113.75-203.0.113.78
  dns: [192.0.2.53]              # required with sdn
  ntp: [ntp.example.edu]
`

// writeDir writes files into a new temporary cluster directory. A value
// "symlink:<target>" makes a symlink and "dir:" a directory.
func writeDir(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "symlink:"):
			err = os.Symlink(strings.TrimPrefix(content, "symlink:"), path)
		case content == "dir:":
			err = os.Mkdir(path, 0o755)
		default:
			err = os.WriteFile(path, []byte(content), 0o600)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// load loads files; a non-Problems error fails the test.
func load(t *testing.T, files map[string]string, opts config.LoadOptions) (*config.Cluster, config.Problems) {
	t.Helper()
	c, err := config.Load(writeDir(t, files), opts)
	if err == nil {
		return c, nil
	}
	var probs config.Problems
	if !errors.As(err, &probs) {
		t.Fatalf("Load: %v (%T), want Problems", err, err)
	}
	if c != nil {
		t.Errorf("Load returned a Cluster with problems")
	}
	return nil, probs
}

// mustLoad loads cluster.yaml text and fails on any problem.
func mustLoad(t *testing.T, cluster string) *config.Cluster {
	t.Helper()
	c, probs := load(t, map[string]string{config.ClusterFile: cluster}, config.LoadOptions{})
	if probs != nil {
		t.Fatalf("Load: unexpected problems:\n%v", probs)
	}
	return c
}

// prob builds an expected problem (lines are not compared).
func prob(file, path, msg string) config.Problem {
	return config.Problem{File: file, Path: path, Message: msg}
}

// inCluster is a problem in cluster.yaml.
func inCluster(path, msg string) config.Problem { return prob(config.ClusterFile, path, msg) }

// diffProblems compares problems ignoring line numbers.
func diffProblems(want, got config.Problems) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(config.Problem{}, "Line"), cmpopts.EquateEmpty())
}

// change is one edit of a YAML document: set path to a YAML value, or
// delete path.
type change struct {
	path, value string
	del         bool
}

func set(path, value string) change { return change{path: path, value: value} }
func del(path string) change        { return change{path: path, del: true} }

// edit applies changes to doc (creating mappings on the way) and returns
// the re-encoded YAML.
func edit(t *testing.T, doc string, changes ...change) string {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		m := root.Content[0]
		keys := strings.Split(ch.path, ".")
		for _, k := range keys[:len(keys)-1] {
			m = child(m, k, true)
		}
		last := keys[len(keys)-1]
		if ch.del {
			removeKey(m, last)
			continue
		}
		var val yaml.Node
		if err := yaml.Unmarshal([]byte(ch.value), &val); err != nil {
			t.Fatalf("value %q: %v", ch.value, err)
		}
		v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "~"}
		if len(val.Content) > 0 {
			v = val.Content[0]
		}
		if c := child(m, last, false); c != nil {
			*c = *v
			continue
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: last}, v)
	}
	out, err := yaml.Marshal(&root)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func child(m *yaml.Node, key string, create bool) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if create && v.Kind != yaml.MappingNode {
				*v = yaml.Node{Kind: yaml.MappingNode}
			}
			return v
		}
	}
	if !create {
		return nil
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

func removeKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// checkProblems runs table cases that expect exactly the given problems.
type problemCase struct {
	name  string
	files map[string]string
	opts  config.LoadOptions
	want  config.Problems
}

func runProblemCases(t *testing.T, cases []problemCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got := load(t, tc.files, tc.opts)
			if d := diffProblems(tc.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s\ngot:\n%v", d, got)
			}
		})
	}
}

// only is a cluster directory holding just cluster.yaml.
func only(cluster string) map[string]string { return map[string]string{config.ClusterFile: cluster} }

// netipOpts compares netip values by value.
func netipOpts() cmp.Option {
	return cmp.Options{
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
		cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cmpSorted compares string slices as sets.
func cmpSorted() cmp.Option { return cmpopts.SortSlices(func(a, b string) bool { return a < b }) }
