// Package lab composes talosc-lab: the simulated clouds, the Image Factory,
// the Talos nodes and the Kubernetes API, all on loopback, sharing one call
// recorder and one set of fault knobs. Tests start it in-process; users
// start it with the talosc-lab command.
package lab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/lab/bridge"
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
	bridge   *bridge.Bridge
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
// (OnBootstrap, KubeAPI, OnEvent, EtcdEndpoint, EtcdLost, EtcdRestore), built from the fleet and
// the VIPs after it, only once a node boots, which no cloud has asked for
// yet.
func (l *Lab) startNodes(o Options) {
	timing := talosnode.DefaultTiming()
	if o.NodesBoot > 0 {
		timing.Boot = o.NodesBoot
	}
	l.fleet = talosnode.New(talosnode.Options{
		Recorder:     l.rec,
		Injector:     l.inj,
		Timing:       timing,
		Schematics:   l.schematic,
		OnBootstrap:  func(info talosnode.BootstrapInfo) { l.kube.OnBootstrap(info) },
		OnEvent:      l.onNodeEvent,
		KubeAPI:      func(c *talosnode.Cluster) talosnode.KubeAPI { return l.kube.HealthAPI(c) },
		EtcdEndpoint: func(c *talosnode.Cluster) string { return l.kube.EtcdEndpoint(c) },
		EtcdLost:     func(c *talosnode.Cluster) { l.kube.EtcdLost(c) },
		EtcdRestore: func(info talosnode.BootstrapInfo, fill func(string) error) error {
			return l.kube.EtcdRestore(info, fill)
		},
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
