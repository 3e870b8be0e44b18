// Package lab composes talosc-lab: the simulated clouds, the Image Factory,
// the Talos nodes and the Kubernetes API, all on loopback, sharing one call
// recorder and one set of fault knobs. Tests start it in-process; users
// start it with the talosc-lab command.
package lab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/lab/follow"
	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labkube"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/nat"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/lab/rancher"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/lab/vip"
)

// Providers the lab simulates.
const (
	ProviderOpenStack = "openstack"
	ProviderProxmox   = "proxmox"
)

// Talos versions the lab's Image Factory lists by default.
const (
	DefaultTalosVersion = "v1.13.8"
	NewestTalosVersion  = "v1.14.1"
)

// DefaultVIPFailover is how long an API VIP stays unowned after its owner
// went down: about the etcd lease a Talos control plane waits out before
// it takes the VIP over.
const DefaultVIPFailover = time.Second

// Options configure a Lab.
type Options struct {
	// Provider is "openstack" or "proxmox": the cloud the lab simulates.
	Provider string
	// NodesBoot is how long a simulated node takes to boot.
	NodesBoot time.Duration
	// VIPFailover is how long a cluster's API VIP stays unowned (the API
	// refuses connections) after its owner went down, before another
	// control plane takes it; 0 means DefaultVIPFailover.
	VIPFailover time.Duration
	// Knobs are the fault knobs (latency, error rates, hangs, scripted faults).
	Knobs labnet.Knobs
	// TalosVersions are what the Image Factory lists.
	TalosVersions []string
	// DataDir holds the Kubernetes APIs' data; "" means a new temporary
	// directory removed by Close.
	DataDir string
	// Logf receives the lab's own messages; nil discards them.
	Logf func(format string, args ...any)
	// ArgoCD starts the argocd plugin's management cluster: a second real
	// kube-apiserver with the ArgoCD CRDs (about 4 s and 300 MB more).
	ArgoCD bool
	// RancherAuth is the auth provider of the lab Rancher's token user,
	// which answers its principals search: rancher.ProviderLocal ("" too),
	// ProviderOpenLDAP or ProviderShibboleth.
	RancherAuth string
	// ClusterCIDR is the cluster network of the directory WriteClusterDir
	// writes (OpenStack default 127.16.0.0/24; on Proxmox the bridge's
	// subnet, default 127.20.0.0/24, VIP .2), and ExternalCIDR the
	// lab OpenStack's external network (default 127.202.0.0/24): labs
	// running side by side in one process need their own.
	ClusterCIDR, ExternalCIDR string
	// Follow, when set, makes the lab follow a real OpenStack instead of
	// simulating one (Provider is then "openstack"): see follow.Options.
	Follow *follow.Options
}

// Endpoint is one service the lab runs.
type Endpoint struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Lab is a running lab.
type Lab struct {
	opts      Options
	ctx       context.Context
	cancel    context.CancelFunc
	dataDir   string
	logf      func(format string, args ...any)
	nat       *nat.NAT
	fleet     *talosnode.Fleet
	kube      *labkube.Kubernetes
	vips      *vip.Tracker
	nodeKnobs *nodeKnobs
	rec       *labnet.Recorder
	inj       *labnet.Injector
	started   time.Time
	mu        sync.Mutex
	services  []Endpoint
	closers   []func() error
	// Factory is the Image Factory.
	Factory *imagefactory.Factory
	// OpenStack is the simulated OpenStack (provider "openstack").
	OpenStack *openstack.Cloud
	// Proxmox is the simulated Proxmox VE (provider "proxmox").
	Proxmox *proxmox.Server
	// ArgoCD is the argocd plugin's management cluster (Options.ArgoCD).
	ArgoCD *argocd.Management
	// Rancher is the simulated Rancher (for the rancher plugin).
	Rancher *rancher.Server
	// Follower follows a real OpenStack (Options.Follow).
	Follower *follow.Follower
	bridge   *bridge
}

// Start starts every service of the lab.
func Start(ctx context.Context, o Options) (*Lab, error) {
	if err := ValidateKnobs(o.Knobs); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if o.Follow != nil {
		o.Provider = ProviderOpenStack
	}
	if len(o.TalosVersions) == 0 {
		o.TalosVersions = []string{DefaultTalosVersion, NewestTalosVersion}
	}
	l := &Lab{opts: o, rec: &labnet.Recorder{}, inj: labnet.NewInjector(o.Knobs), started: time.Now(), nat: nat.New(), logf: o.Logf}
	if l.logf == nil {
		l.logf = func(string, ...any) {}
	}
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.closers = append(l.closers, func() error { l.cancel(); return nil }, l.nat.Close)
	if err := l.start(o); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

func (l *Lab) start(o Options) error {
	l.dataDir = o.DataDir
	if l.dataDir == "" {
		dir, err := os.MkdirTemp("", "talosc-lab-")
		if err != nil {
			return fmt.Errorf("lab data directory: %w", err)
		}
		l.dataDir = dir
		l.closers = append(l.closers, func() error { return os.RemoveAll(dir) })
	}
	f, err := imagefactory.Start(l.ctx, imagefactory.Options{Versions: o.TalosVersions, Injector: l.inj, Recorder: l.rec})
	if err != nil {
		return err
	}
	l.Factory = f
	l.add(Endpoint{Name: imagefactory.Service, URL: f.URL}, f.Close)
	if err := l.startRancher(o.RancherAuth); err != nil {
		return err
	}
	if o.ArgoCD {
		m, err := argocd.Start(l.ctx, argocd.Options{Address: "127.0.0.1:0", DataDir: filepath.Join(l.dataDir, "argocd"), Injector: l.inj, Recorder: l.rec, Logf: l.logf})
		if err != nil {
			return err
		}
		l.ArgoCD = m
		l.add(Endpoint{Name: "argocd-management", URL: m.URL()}, m.Close)
	}
	l.startNodes(o)
	l.watchAgents()
	// closers run backwards: the Kubernetes APIs, then the VIPs stop before
	// the fleet powers off
	l.closers = append(l.closers, l.fleet.Close, l.vips.Close, l.kube.Close)
	switch {
	case o.Follow != nil:
		return l.startFollow(*o.Follow)
	case o.Provider == ProviderOpenStack:
		return l.startOpenStack()
	case o.Provider == ProviderProxmox:
		return l.startProxmox()
	default:
		return fmt.Errorf("lab provider %q: choose %s or %s", o.Provider, ProviderOpenStack, ProviderProxmox)
	}
}

// startNodes builds the Talos fleet, its clusters' API VIPs and their
// Kubernetes, which are wired in a loop: the fleet calls the Kubernetes
// (OnBootstrap, KubeAPI, OnEvent), built from the fleet and the VIPs after
// it, only once a node boots, which no cloud has asked for yet.
func (l *Lab) startNodes(o Options) {
	timing := talosnode.DefaultTiming()
	if o.NodesBoot > 0 {
		timing.Boot = o.NodesBoot
	}
	l.fleet = talosnode.New(talosnode.Options{
		Recorder:    l.rec,
		Injector:    l.inj,
		Timing:      timing,
		Schematics:  l.schematic,
		OnBootstrap: func(info talosnode.BootstrapInfo) { l.kube.OnBootstrap(info) },
		OnEvent:     l.onNodeEvent,
		KubeAPI:     func(c *talosnode.Cluster) talosnode.KubeAPI { return l.kube.HealthAPI(c) },
	})
	l.vips = vip.New(l.fleet, cmp.Or(o.VIPFailover, DefaultVIPFailover), l.logf)
	l.nodeKnobs = &nodeKnobs{fleet: l.fleet, pending: map[netip.Addr]talosnode.Knobs{}}
	l.kube = labkube.New(l.ctx, labkube.Options{
		Fleet: l.fleet, VIPs: l.vips, DataDir: l.dataDir, FixedAddress: l.nat.Target,
		Listed:   func(name, url string) { l.add(Endpoint{Name: name, URL: url}, nil) },
		Unlisted: l.removeService,
		Injector: l.inj, Recorder: l.rec, Logf: l.logf,
	})
}

// onNodeEvent moves the VIPs, then mirrors the node into its Kubernetes.
func (l *Lab) onNodeEvent(ev talosnode.Event) {
	l.vips.OnNodeEvent(ev)
	l.kube.OnNodeEvent(ev)
}

// schematic tells the Talos nodes which extensions a schematic carries.
func (l *Lab) schematic(id string) ([]talosnode.Extension, bool) {
	names, ok := l.Factory.Extensions(id)
	exts := make([]talosnode.Extension, len(names))
	for i, n := range names {
		exts[i] = talosnode.Extension{Name: n}
	}
	return exts, ok
}

// add lists e among the services; Close calls closeFn (unless nil).
func (l *Lab) add(e Endpoint, closeFn func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.services = append(l.services, e)
	if closeFn != nil {
		l.closers = append(l.closers, closeFn)
	}
}

// removeService drops the service named name from the list.
func (l *Lab) removeService(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.services = slices.DeleteFunc(l.services, func(e Endpoint) bool { return e.Name == name })
}

// destroyNode deletes the Talos node at addr with its VM or server: its
// Node stays, silent, its mirror pods go; the last control plane of a
// cluster takes the cluster's API with it.
func (l *Lab) destroyNode(addr netip.Addr) {
	n, ok := l.fleet.Node(addr)
	if !ok {
		return
	}
	st := n.Status()
	l.fleet.Destroy(addr)
	l.kube.Removed(st)
}

// KubeAPI returns the Kubernetes API of cluster once it is bootstrapped,
// else nil.
func (l *Lab) KubeAPI(cluster string) *kubeapi.Server { return l.kube.Server(cluster) }

// NodeTiming is how long the lab's simulated Talos work takes (boots,
// reboots, installs), NodesBoot and the defaults filled in.
func (l *Lab) NodeTiming() talosnode.Timing {
	return l.fleet.Timing()
}

// TalosClusters returns every simulated Talos cluster a node ever booted
// into (their etcd member lists and quorum), by name.
func (l *Lab) TalosClusters() []*talosnode.Cluster { return l.fleet.Clusters() }

// Close drops the late requests not yet applied, then stops every
// service, in reverse start order.
func (l *Lab) Close() error {
	l.mu.Lock()
	closers := slices.Clone(l.closers)
	l.closers = nil
	l.mu.Unlock()
	errs := []error{l.inj.Close()}
	for _, c := range slices.Backward(closers) {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// Recorder returns the recorder shared by every service.
func (l *Lab) Recorder() *labnet.Recorder { return l.rec }

// Injector returns the fault injector shared by every service.
func (l *Lab) Injector() *labnet.Injector { return l.inj }

// Services lists what runs where.
func (l *Lab) Services() []Endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.services)
}

// Status is what "talosc-lab status" shows.
type Status struct {
	Provider     string         `json:"provider"`
	Uptime       string         `json:"uptime"`
	Services     []Endpoint     `json:"services"`
	Calls        int            `json:"calls"`
	Mutations    int            `json:"mutations"`
	CallsBy      map[string]int `json:"callsByService"`
	BusyDuration string         `json:"busy"` // see labnet.Recorder.Busy
	// Lost and Late count the calls whose answer was lost after (Lost)
	// or before (Late) the request was applied; LatePending the late
	// requests not applied yet.
	Lost        int `json:"lost"`
	Late        int `json:"late"`
	LatePending int `json:"latePending"`
	// VIPs are the clusters' API VIPs and their owners.
	VIPs []vip.Status `json:"vips,omitempty"`
}

// Status reports the lab's services and call counts.
func (l *Lab) Status() Status {
	calls := l.rec.Calls()
	by := map[string]int{}
	var lost, late int
	for _, c := range calls {
		by[c.Service]++
		lost += btoi(c.Lost)
		late += btoi(c.Late)
	}
	return Status{
		Provider:     l.opts.Provider,
		Uptime:       time.Since(l.started).Round(time.Second).String(),
		Services:     l.Services(),
		Calls:        len(calls),
		Mutations:    len(l.rec.Mutations()),
		CallsBy:      by,
		BusyDuration: l.rec.Busy().String(),
		Lost:         lost,
		Late:         late,
		LatePending:  l.inj.Pending(),
		VIPs:         l.vips.Status(),
	}
}

// ControlHandler serves the lab's control API:
//
//   - GET /status: Status.
//   - GET /calls: every recorded call.
//   - PUT /knobs: the API faults of every service (JSON labnet.Knobs;
//     latency, slow and lateBy are Go durations, "25s", or nanoseconds),
//     204 once set, 400 for knobs ValidateKnobs refuses. Late requests
//     already decided are still applied.
//   - GET /nodes: every Talos node's talosnode.NodeStatus, by address.
//   - PUT /nodes/{address}/knobs: one node's scripted faults, replacing
//     its knobs (JSON talosnode.Knobs, e.g. {"neverBoots": true},
//     {"resetFails": "disk busy"}, {"resetHangs": true},
//     {"rebootHangs": true}, {"drainBlocked": true},
//     {"neverLeavesEtcd": true}, {"rebootDown": "30s"}: a Go duration);
//     204 once set (drainBlocked's budget included, for a node its
//     Kubernetes knows), 404 when no node runs at the address, 400 for bad
//     JSON or an address outside 127.0.0.0/8, 500 when the Kubernetes side
//     failed. With ?pending=true the knobs of an address without a node
//     wait for the next node that boots there (202).
func (l *Lab) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.Status()) })
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.rec.Calls()) })
	mux.HandleFunc("PUT /knobs", func(w http.ResponseWriter, r *http.Request) {
		k, ok := readKnobs(w, r)
		if !ok {
			return
		}
		l.inj.Set(k)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		nodes := l.fleet.Nodes()
		out := make([]talosnode.NodeStatus, len(nodes))
		for i, n := range nodes {
			out[i] = n.Status()
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("PUT /nodes/{address}/knobs", func(w http.ResponseWriter, r *http.Request) {
		addr, err := netip.ParseAddr(r.PathValue("address"))
		if err == nil {
			err = labnet.CheckLoopback(addr.String())
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("node address: %v", err), http.StatusBadRequest)
			return
		}
		var k talosnode.Knobs
		if !readJSON(w, r, "node knobs", &k) {
			return
		}
		switch now, later := l.nodeKnobs.set(addr, k, r.URL.Query().Get("pending") == "true"); {
		case now:
			if err := l.kube.ApplyKnobs(r.Context(), addr); err != nil {
				http.Error(w, fmt.Sprintf("knobs set; their Kubernetes side (drainBlocked): %v", err), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case later:
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, fmt.Sprintf("no Talos node at %s (?pending=true keeps the knobs for the next one)", addr), http.StatusNotFound)
		}
	})
	return mux
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readJSON decodes the request body into v, answering 400 when it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", what, err), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
