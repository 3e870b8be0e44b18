package lab

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

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// kubernetes runs one real kube-apiserver per bootstrapped cluster, on the
// cluster's API VIP, and keeps its Node objects and the control planes'
// mirror pods in step with the simulated Talos nodes (as kubelets and
// Talos would; see mirror); its /version follows the control planes'
// configured apiserver (see apiServerVersion). A cluster's API
// lives as long as one of its control planes does: powered off, they keep
// it and its data for when they come back; once the last one is deleted or
// reset, the API stops and its data goes, so that a new cluster of the
// same name starts its own.
type kubernetes struct {
	lab     *Lab
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

func newKubernetes(l *Lab) *kubernetes {
	return &kubernetes{lab: l, servers: map[string]*kubeapi.Server{}, stopping: map[string]chan struct{}{}, mirrors: map[string]*nodeMirror{}}
}

// onBootstrap starts the cluster's API when its etcd is bootstrapped.
func (k *kubernetes) onBootstrap(info talosnode.BootstrapInfo) {
	l := k.lab
	host := info.Endpoint.Hostname()
	vip, err := netip.ParseAddr(host)
	if err != nil {
		l.logf("kubernetes for %s: endpoint host %q is not an address", info.ClusterName, host)
		return
	}
	sans := []netip.Addr{vip}
	for _, s := range info.CertSANs {
		if a, err := netip.ParseAddr(s); err == nil {
			sans = append(sans, a)
		}
	}
	if fixed, ok := l.nat.Target(vip); ok { // the endpoint is a floating IP: serve on the VIP behind it
		vip = fixed
	}
	k.waitStopped(info.ClusterName)
	l.vips.Bootstrapped(info.ClusterName, vip)
	dataDir := k.dataDir(info.ClusterName)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		l.logf("kubernetes for %s: %v", info.ClusterName, err)
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, 30*time.Minute) // the binary may be built first
	defer cancel()
	start := time.Now()
	srv, err := kubeapi.Start(ctx, kubeapi.Options{
		Address:   net.JoinHostPort(vip.String(), strconv.Itoa(6443)),
		CACertPEM: info.CACert,
		CAKeyPEM:  info.CAKey,
		ExtraSANs: sans,
		DataDir:   dataDir,
		Injector:  l.inj,
		Recorder:  l.rec,
		Logf:      l.logf,
		Version:   func() string { return k.apiServerVersion(info.ClusterName, vip) },
	})
	if err != nil {
		l.logf("kubernetes for %s: %v", info.ClusterName, err)
		return
	}
	l.rec.Work("kubernetes", "start "+info.ClusterName, start, time.Since(start))
	k.mu.Lock()
	if k.closed { // the lab closed while the API started
		k.mu.Unlock()
		_ = srv.Close()
		return
	}
	k.servers[info.ClusterName] = srv
	k.mu.Unlock()
	l.vips.Attach(info.ClusterName, srv)
	l.add(Endpoint{Name: serviceName(info.ClusterName), URL: srv.URL()}, nil)
	for _, n := range l.fleet.Nodes() {
		if st := n.Status(); st.Cluster == info.ClusterName && st.APIUp {
			k.mirror(st, kubeletStarted)
		}
	}
	k.stopIfGone(info.ClusterName) // every control plane went while the API started
}

// serviceName is the name of cluster's API among the lab's services.
func serviceName(cluster string) string { return "kubernetes/" + cluster }

// dataDir holds cluster's etcd data, certificates and log.
func (k *kubernetes) dataDir(cluster string) string {
	return filepath.Join(k.lab.dataDir, "kubernetes-"+cluster)
}

// waitStopped waits until the previous API of cluster, if it is stopping,
// has stopped and its data is gone.
func (k *kubernetes) waitStopped(cluster string) {
	k.mu.Lock()
	done := k.stopping[cluster]
	k.mu.Unlock()
	if done != nil {
		<-done
	}
}

// stopIfGone stops cluster's API once none of its control planes is left
// in the fleet (each deleted or wiped; a powered-off one still counts): the
// lab forgets its VIP and its API at once (KubeAPI is nil, Services no
// longer list it); the apiserver stops and its data is removed in the
// background, which the next API of that name waits for.
func (k *kubernetes) stopIfGone(cluster string) {
	l := k.lab
	if cluster == "" || slices.ContainsFunc(l.fleet.Nodes(), func(n *talosnode.Node) bool {
		st := n.Status()
		return st.Cluster == cluster && st.ControlPlane
	}) {
		return
	}
	l.vips.Forget(cluster)
	k.mu.Lock()
	defer k.mu.Unlock()
	srv, ok := k.servers[cluster]
	if !ok {
		return
	}
	delete(k.servers, cluster)
	l.removeService(serviceName(cluster))
	done := make(chan struct{})
	k.stopping[cluster] = done
	l.logf("kubernetes for %s: its last control plane is gone; stopping its API", cluster)
	go func() {
		defer close(done)
		start := time.Now()
		if err := errors.Join(srv.Close(), os.RemoveAll(k.dataDir(cluster))); err != nil {
			l.logf("kubernetes for %s: stop: %v", cluster, err)
		}
		l.rec.Work("kubernetes", "stop "+cluster, start, time.Since(start))
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.stopping[cluster] == done {
			delete(k.stopping, cluster)
		}
	}()
}

// close stops every cluster's API and waits for the stops under way and
// for the Node changes being applied; an API that finishes starting later
// stops at once, and later node changes are dropped. The data stays (in
// Options.DataDir, or a temporary directory the lab removes).
func (k *kubernetes) close() error {
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

func (k *kubernetes) server(cluster string) *kubeapi.Server {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.servers[cluster]
}

// KubeAPI returns the Kubernetes API of cluster once it is bootstrapped,
// else nil.
func (l *Lab) KubeAPI(cluster string) *kubeapi.Server { return l.kube.server(cluster) }
