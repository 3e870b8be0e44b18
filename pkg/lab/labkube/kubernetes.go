// Package labkube is the lab's Kubernetes side: one real kube-apiserver
// per bootstrapped Talos cluster, on the cluster's API VIP, with its Node
// objects and the control planes' mirror pods kept in step with the
// simulated Talos nodes (as kubelets and Talos would), its /version
// following the control planes' configured apiserver, and the Kubernetes
// conditions of the nodes' server-side health check. The lab wires it to
// its fleet of Talos nodes and their VIPs (Options.Fleet, Options.VIPs).
package labkube

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	kubeclient "k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// Fleet is what the Kubernetes side needs of the lab's Talos nodes
// (a *talosnode.Fleet).
type Fleet interface {
	// Nodes lists every node.
	Nodes() []*talosnode.Node
	// Node returns the node at addr.
	Node(addr netip.Addr) (*talosnode.Node, bool)
}

// VIPs is what the Kubernetes side needs of the clusters' API VIPs
// (a *vip.Tracker).
type VIPs interface {
	// Bootstrapped tells that cluster's API is about to serve on addr.
	Bootstrapped(cluster string, addr netip.Addr)
	// Attach hands the VIPs cluster's running API.
	Attach(cluster string, srv *kubeapi.Server)
	// Forget drops cluster's VIPs: its API is gone.
	Forget(cluster string)
	// Owner is the control plane holding cluster's VIP addr, if known.
	Owner(cluster string, addr netip.Addr) netip.Addr
}

// Options wire a Kubernetes into the lab.
type Options struct {
	// Fleet is the lab's Talos nodes, VIPs their clusters' API VIPs.
	Fleet Fleet
	VIPs  VIPs
	// DataDir holds each cluster's etcd data, certificates and log, in
	// kubernetes-<cluster>.
	DataDir string
	// FixedAddress returns the fixed address a floating IP forwards to
	// (the lab's NAT): an endpoint on a floating IP serves on the VIP
	// behind it.
	FixedAddress func(fip netip.Addr) (netip.Addr, bool)
	// Listed and Unlisted add a cluster's API to the lab's services while
	// it serves (named ServiceName).
	Listed   func(name, url string)
	Unlisted func(name string)
	// Injector and Recorder are the lab's, shared with every API.
	Injector *labnet.Injector
	Recorder *labnet.Recorder
	// Logf receives the messages.
	Logf func(format string, args ...any)
}

// Kubernetes runs one real kube-apiserver per bootstrapped cluster, on the
// cluster's API VIP, and keeps its Node objects and the control planes'
// mirror pods in step with the simulated Talos nodes (as kubelets and
// Talos would; see mirror); its /version follows the control planes'
// configured apiserver (see apiServerVersion). A cluster's API
// lives as long as one of its control planes does: powered off, they keep
// it and its data for when they come back; once the last one is deleted or
// reset, the API stops and its data goes, so that a new cluster of the
// same name starts its own.
type Kubernetes struct {
	ctx     context.Context
	opts    Options
	mu      sync.Mutex
	servers map[string]*kubeapi.Server // by cluster name
	// stopping holds, per cluster name, a channel closed once that name's
	// last API has stopped and its data is gone: the next API of that name
	// waits for its VIP address and data directory.
	stopping map[string]chan struct{}
	// closed: the lab is closing; an API that finishes starting stops.
	closed bool
	// mirrors order the changes of each node's Node (see mirror); wg
	// counts the goroutines applying them.
	mirrors map[string]*nodeMirror
	wg      sync.WaitGroup
}

// New returns the lab's Kubernetes, which runs no API until a cluster is
// bootstrapped (OnBootstrap); ctx bounds its work.
func New(ctx context.Context, o Options) *Kubernetes {
	return &Kubernetes{ctx: ctx, opts: o, servers: map[string]*kubeapi.Server{}, stopping: map[string]chan struct{}{}, mirrors: map[string]*nodeMirror{}}
}

// OnBootstrap starts the cluster's API when its etcd is bootstrapped
// (the fleet's Options.OnBootstrap); an API whose etcd was lost
// (EtcdLost) starts again on an empty one.
func (k *Kubernetes) OnBootstrap(info talosnode.BootstrapInfo) {
	o := k.opts
	if srv := k.Server(info.ClusterName); srv != nil {
		if err := srv.RestartOnEtcd(k.ctx, nil); err != nil {
			o.Logf("kubernetes for %s: restart on a new etcd: %v", info.ClusterName, err)
		}
		return
	}
	host := info.Endpoint.Hostname()
	vip, err := netip.ParseAddr(host)
	if err != nil {
		o.Logf("kubernetes for %s: endpoint host %q is not an address", info.ClusterName, host)
		return
	}
	sans := []netip.Addr{vip}
	for _, s := range info.CertSANs {
		if a, err := netip.ParseAddr(s); err == nil {
			sans = append(sans, a)
		}
	}
	if fixed, ok := o.FixedAddress(vip); ok { // the endpoint is a floating IP: serve on the VIP behind it
		vip = fixed
	}
	k.waitStopped(info.ClusterName)
	o.VIPs.Bootstrapped(info.ClusterName, vip)
	srv, err := k.start(info, vip, sans)
	if err != nil {
		o.Logf("kubernetes for %s: %v", info.ClusterName, err)
		return
	}
	k.mu.Lock()
	if k.closed { // the lab closed while the API started
		k.mu.Unlock()
		_ = srv.Close()
		return
	}
	k.servers[info.ClusterName] = srv
	k.mu.Unlock()
	o.VIPs.Attach(info.ClusterName, srv)
	o.Listed(ServiceName(info.ClusterName), srv.URL())
	for _, n := range o.Fleet.Nodes() {
		if st := n.Status(); st.Cluster == info.ClusterName && st.APIUp {
			k.mirror(st, kubeletStarted)
		}
	}
	k.stopIfGone(info.ClusterName) // every control plane went while the API started
}

// start starts the kube-apiserver of the cluster info describes on vip,
// its certificate valid for sans, and records how long it took.
func (k *Kubernetes) start(info talosnode.BootstrapInfo, vip netip.Addr, sans []netip.Addr) (*kubeapi.Server, error) {
	o := k.opts
	dataDir := k.dataDir(info.ClusterName)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(k.ctx, 30*time.Minute) // the binary may be built first
	defer cancel()
	start := time.Now()
	srv, err := kubeapi.Start(ctx, kubeapi.Options{
		Address:   net.JoinHostPort(vip.String(), strconv.Itoa(6443)),
		CACertPEM: info.CACert,
		CAKeyPEM:  info.CAKey,
		ExtraSANs: sans,
		DataDir:   dataDir,
		Injector:  o.Injector,
		Recorder:  o.Recorder,
		Logf:      o.Logf,
		Version:   func() string { return k.apiServerVersion(info.ClusterName, vip) },
	})
	if err != nil {
		return nil, err
	}
	if srv.EtcdEndpoint() == "" {
		o.Logf("kubernetes for %s: the kube-apiserver helper does not say where its etcd is (built before it did): "+
			"EtcdSnapshot fails on every node; rebuild it with make kube-apiserver", info.ClusterName)
	}
	o.Recorder.Work("kubernetes", "start "+info.ClusterName, start, time.Since(start))
	return srv, nil
}

// ServiceName is the name of cluster's API among the lab's services.
func ServiceName(cluster string) string { return "kubernetes/" + cluster }

// dataDir holds cluster's etcd data, certificates and log.
func (k *Kubernetes) dataDir(cluster string) string {
	return filepath.Join(k.opts.DataDir, "kubernetes-"+cluster)
}

// waitStopped waits until the previous API of cluster, if it is stopping,
// has stopped and its data is gone.
func (k *Kubernetes) waitStopped(cluster string) {
	k.mu.Lock()
	done := k.stopping[cluster]
	k.mu.Unlock()
	if done != nil {
		<-done
	}
}

// stopIfGone stops cluster's API once none of its control planes is left
// in the fleet (each deleted or wiped; a powered-off one still counts): the
// lab forgets its VIP and its API at once (Server is nil, the lab's
// services no longer list it); the apiserver stops and its data is removed
// in the background, which the next API of that name waits for.
func (k *Kubernetes) stopIfGone(cluster string) {
	o := k.opts
	if cluster == "" || slices.ContainsFunc(o.Fleet.Nodes(), func(n *talosnode.Node) bool {
		st := n.Status()
		return st.Cluster == cluster && st.ControlPlane
	}) {
		return
	}
	o.VIPs.Forget(cluster)
	k.mu.Lock()
	defer k.mu.Unlock()
	srv, ok := k.servers[cluster]
	if !ok {
		return
	}
	delete(k.servers, cluster)
	o.Unlisted(ServiceName(cluster))
	done := make(chan struct{})
	k.stopping[cluster] = done
	o.Logf("kubernetes for %s: its last control plane is gone; stopping its API", cluster)
	go func() {
		defer close(done)
		start := time.Now()
		if err := errors.Join(srv.Close(), os.RemoveAll(k.dataDir(cluster))); err != nil {
			o.Logf("kubernetes for %s: stop: %v", cluster, err)
		}
		o.Recorder.Work("kubernetes", "stop "+cluster, start, time.Since(start))
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.stopping[cluster] == done {
			delete(k.stopping, cluster)
		}
	}()
}

// Close stops every cluster's API and waits for the stops under way and
// for the Node changes being applied; an API that finishes starting later
// stops at once, and later node changes are dropped. The data stays (in
// Options.DataDir).
func (k *Kubernetes) Close() error {
	k.mu.Lock()
	k.closed = true
	servers := slices.Collect(maps.Values(k.servers))
	stopping := slices.Collect(maps.Values(k.stopping))
	clear(k.servers)
	k.mu.Unlock()
	errs := make([]error, 0, len(servers))
	for _, srv := range servers {
		errs = append(errs, srv.Close())
	}
	for _, done := range stopping {
		<-done
	}
	k.wg.Wait()
	return errors.Join(errs...)
}

// Server returns the Kubernetes API of cluster once it is bootstrapped,
// else nil.
func (k *Kubernetes) Server(cluster string) *kubeapi.Server {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.servers[cluster]
}

// Clients are the admin clients of every cluster API running.
func (k *Kubernetes) Clients() []kubeclient.Interface {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]kubeclient.Interface, 0, len(k.servers))
	for _, s := range k.servers {
		out = append(out, s.Client())
	}
	return out
}
