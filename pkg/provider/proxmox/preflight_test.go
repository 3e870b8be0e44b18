package proxmox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

const (
	labTalos    = "v1.13.8"
	tokenID     = "taloscluster@pve!provider"
	tokenSecret = "0b6a8f4e-talosc-test"
)

// pxLab is a lab Proxmox VE and a Cloud connected to it with a cluster.yaml.
type pxLab struct {
	srv   *labpx.Server
	cloud *proxmox.Cloud
	cfg   *config.Cluster
	logs  *logSink
}

// logSink collects a Cloud's log lines; the Cloud logs from concurrent
// requests and retries, so every write and read holds its lock.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

// Logf is the Cloud's Options.Logf.
func (s *logSink) Logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.b, format+"\n", args...)
}

// String is everything logged so far.
func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// labCluster is a cluster.yaml for the lab; extra is appended to the
// proxmox section, netCluster replaces network.cluster's bridge line.
type labCluster struct {
	extra      string
	netCluster string
}

// newLab starts a lab Proxmox (datacenter firewall on, short tasks; o may
// override) with a token holding acl ("/" with every privilege when nil).
func newLab(t *testing.T, o labpx.Options, acl []labpx.ACL, c labCluster) *pxLab {
	t.Helper()
	if acl == nil {
		acl = []labpx.ACL{{Path: "/", Privs: labpx.AllPrivileges()}}
	}
	o.Tokens = append(o.Tokens, labpx.Token{ID: tokenID, Secret: tokenSecret, ACL: acl})
	if o.TaskDuration == 0 {
		o.TaskDuration = 2 * time.Millisecond
	}
	if o.TaskDurations == nil {
		o.TaskDurations = map[string]time.Duration{"download": 5 * time.Millisecond, "imgcopy": 5 * time.Millisecond}
	}
	srv, err := labpx.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.OnUnhandled(func(method, path string) { t.Errorf("unhandled request %s %s", method, path) })
	l := &pxLab{srv: srv, logs: &logSink{}}
	l.cfg = writeCluster(t, srv, c)
	l.cloud, err = proxmox.Connect(t.Context(), l.cfg, proxmox.Options{
		Poll: 10 * time.Millisecond, TaskTimeout: 10 * time.Second,
		Logf: l.logs.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Recorder().Reset()
	return l
}

func writeCluster(t *testing.T, srv *labpx.Server, c labCluster) *config.Cluster {
	t.Helper()
	if c.netCluster == "" {
		c.netCluster = "bridge: vmbr0"
	}
	dir := t.TempDir()
	cluster := fmt.Sprintf(`name: c
include: [secrets.yaml]
talos:
  version: %s
kubernetes:
  version: v1.35.4
controlplane: {count: 3, cores: 2, memory: 4, disk: 20}
workers:
  worker: {count: 2, cores: 2, memory: 4, disk: 20}
proxmox:
  url: %s
  storage: local-lvm
  iso_storage: local
  tls_verify: %s
%s  network:
    cluster:
      %s
network:
  cluster:
    cidr: 127.20.0.0/24
    kubeapi_vip: 127.20.0.2
  dns: [127.0.0.53]
  ntp: [127.0.0.123]
security:
  kubernetes:
    lab: 127.0.0.0/8
`, labTalos, srv.URL, filepath.Join(dir, "ca.pem"), c.extra, c.netCluster)
	for name, data := range map[string][]byte{
		"cluster.yaml": []byte(cluster),
		"secrets.yaml": fmt.Appendf(nil, "proxmox:\n  token_id: %q\n  token_secret: %q\n", tokenID, tokenSecret),
		"ca.pem":       srv.CAPEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// noMutations fails the test when the lab saw a mutating call.
func (l *pxLab) noMutations(t *testing.T) {
	t.Helper()
	if m := l.srv.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
}

// twoNodes has pve1 and pve2 with node-local "local" (iso) and "local-lvm".
func twoNodes() labpx.Options {
	return labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve2", MaxMem: 32 << 30}, {Name: "pve1"}}}
}

func TestPreflight_FullTokenPasses(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	env, err := l.cloud.Preflight(t.Context(), l.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Nodes) != 2 || env.Nodes[0].Name != "pve1" || env.Nodes[1].Name != "pve2" || !env.Nodes[0].Online || !env.Nodes[0].Download {
		t.Errorf("nodes %+v", env.Nodes)
	}
	if want := uint64(30 << 30); env.Nodes[1].FreeMemory != want {
		t.Errorf("pve2 free memory %d, want %d", env.Nodes[1].FreeMemory, want)
	}
	if env.Version != labpx.DefaultVersion || env.Storage.ID != "local-lvm" || env.ISOStorage.ID != "local" || env.CIDataStorage.ID != "local" || env.ISOStorage.Shared {
		t.Errorf("env %+v", env)
	}
	l.noMutations(t)
	// One run, one preflight: a second call reads nothing.
	l.srv.Recorder().Reset()
	if again, err := l.cloud.Preflight(t.Context(), l.cfg); err != nil || again != env || len(l.srv.Recorder().Calls()) != 0 {
		t.Errorf("second preflight = %p, %v after %d calls", again, err, len(l.srv.Recorder().Calls()))
	}
}

// The suggested TalosCluster role, granted as the reference documents it,
// is enough; taking privileges away lists exactly those missing, per path.
func TestPreflight_ListsEveryMissingPrivilegePerPath(t *testing.T) {
	t.Parallel()
	role := labpx.TalosClusterPrivileges()
	without := func(drop ...string) []string {
		var out []string
		for _, p := range role {
			if !slices.Contains(drop, p) {
				out = append(out, p)
			}
		}
		return out
	}
	ok := newLab(t, twoNodes(), []labpx.ACL{{Path: "/", Privs: role}}, labCluster{})
	if _, err := ok.cloud.Preflight(t.Context(), ok.cfg); err != nil {
		t.Fatalf("TalosCluster role: %v", err)
	}
	acl := []labpx.ACL{
		{Path: "/", Privs: without("VM.Config.CDROM", "VM.Config.CPU")},
		{Path: "/storage/local", Privs: without("Datastore.AllocateTemplate")},
		// A non-propagating ACL on /sdn/zones does not reach the bridge.
		{Path: "/sdn/zones", Privs: []string{"SDN.Audit"}, NoPropagate: true},
		{Path: "/nodes/pve2", Privs: []string{"Sys.AccessNetwork"}},
	}
	l := newLab(t, twoNodes(), acl, labCluster{})
	_, err := l.cloud.Preflight(t.Context(), l.cfg)
	want := "Proxmox token is missing required effective permissions: " +
		"/storage/local: Datastore.AllocateTemplate; " +
		"/vms: VM.Config.CDROM, VM.Config.CPU; " +
		"/nodes/pve2: Sys.Audit; " +
		"grant them to the token (proxmox.token_id)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v\nwant %s...", err, want)
	}
	l.noMutations(t)
}

func TestPreflight_Refusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    labpx.Options
		c    labCluster
		want string
	}{
		{"proxmox 8", labpx.Options{DatacenterFirewall: true, Version: "8.4.1"}, labCluster{}, `runs Proxmox VE "8.4.1"; talosc needs Proxmox VE 9 or newer`},
		{"datacenter firewall off", labpx.Options{}, labCluster{}, "the datacenter firewall is off, so the per-VM security allowlists"},
		{"shared cidata storage", labpx.Options{DatacenterFirewall: true, Storages: []labpx.Storage{
			{ID: "local", Content: []string{"iso"}},
			{ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}},
			{ID: "nfs", Type: "nfs", Content: []string{"iso"}, Shared: true},
		}}, labCluster{extra: "  cidata_storage: nfs\n"}, `proxmox.cidata_storage: storage "nfs" is shared; the per-VM cidata ISOs need node-local storage`},
		{"missing storage", labpx.Options{DatacenterFirewall: true}, labCluster{extra: "  cidata_storage: nope\n"}, `proxmox.cidata_storage: storage "nope" does not exist on any candidate node`},
		{"missing content", labpx.Options{DatacenterFirewall: true, Storages: []labpx.Storage{
			{ID: "local", Content: []string{"backup"}}, {ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}},
		}}, labCluster{}, `proxmox.iso_storage: storage "local" does not hold "iso" content (it holds backup); add iso to its content`},
		{"disabled storage", labpx.Options{DatacenterFirewall: true, Storages: []labpx.Storage{
			{ID: "local", Content: []string{"iso"}}, {ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}, Disabled: true},
		}}, labCluster{}, `proxmox.storage: storage "local-lvm" is disabled`},
		{"unknown node", labpx.Options{DatacenterFirewall: true}, labCluster{extra: "  nodes: [pve9]\n"}, `proxmox.nodes: "pve9" is not a node of the Proxmox cluster (nodes: pve1)`},
		{"offline node", labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve1"}, {Name: "pve2", Offline: true}}}, labCluster{extra: "  nodes: [pve1, pve2]\n"}, `proxmox.nodes: node "pve2" is offline`},
		{"node without the storage", labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve1"}, {Name: "pve2"}}, Storages: []labpx.Storage{
			{ID: "local", Content: []string{"iso"}}, {ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}, Nodes: []string{"pve1"}},
		}}, labCluster{extra: "  nodes: [pve1, pve2]\n"}, "proxmox.nodes: node pve2 does not reach storage local-lvm (proxmox.storage)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, tc.o, nil, tc.c)
			_, err := l.cloud.Preflight(t.Context(), l.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			l.noMutations(t)
		})
	}
}

// Without proxmox.nodes, the compute nodes are the online nodes that reach
// every storage.
func TestPreflight_ComputeNodesReachEveryStorage(t *testing.T) {
	t.Parallel()
	o := labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve1"}, {Name: "pve2"}, {Name: "pve3", Offline: true}}, Storages: []labpx.Storage{
		{ID: "local", Content: []string{"iso"}}, {ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}, Nodes: []string{"pve2", "pve3"}},
	}}
	l := newLab(t, o, nil, labCluster{})
	env, err := l.cloud.Preflight(t.Context(), l.cfg)
	if err != nil || len(env.Nodes) != 1 || env.Nodes[0].Name != "pve2" {
		t.Fatalf("env %+v, %v", env, err)
	}
}
