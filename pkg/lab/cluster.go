package lab

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// kubernetes runs one real kube-apiserver per bootstrapped cluster, on the
// cluster's API VIP, and keeps its Node objects in step with the simulated
// Talos nodes (as kubelets would).
type kubernetes struct {
	lab     *Lab
	mu      sync.Mutex
	servers map[string]*kubeapi.Server // by cluster name
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
	if fixed, ok := l.nat.target(vip); ok { // the endpoint is a floating IP: serve on the VIP behind it
		vip = fixed
	}
	l.vips.bootstrapped(info.ClusterName, vip)
	dataDir := filepath.Join(l.dataDir, "kubernetes-"+info.ClusterName)
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
	})
	if err != nil {
		l.logf("kubernetes for %s: %v", info.ClusterName, err)
		return
	}
	l.vips.attach(info.ClusterName, srv)
	l.rec.Work("kubernetes", "start "+info.ClusterName, start, time.Since(start))
	k.mu.Lock()
	k.servers[info.ClusterName] = srv
	k.mu.Unlock()
	l.add(Endpoint{Name: "kubernetes/" + info.ClusterName, URL: srv.URL()}, srv.Close)
	for _, n := range l.fleet.Nodes() {
		if st := n.Status(); st.Cluster == info.ClusterName && st.APIUp {
			k.register(st)
		}
	}
}

// onNodeEvent mirrors a node's state into its cluster's API.
func (k *kubernetes) onNodeEvent(ev talosnode.Event) {
	switch ev.Kind { //nolint:exhaustive // config changes do not touch the Node object
	case talosnode.EventBooted:
		go k.register(ev.Node)
	case talosnode.EventDown:
		go k.setReady(ev.Node, false)
	case talosnode.EventReset:
		go k.remove(ev.Node)
	}
}

func (k *kubernetes) server(cluster string) *kubeapi.Server {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.servers[cluster]
}

func (k *kubernetes) register(st talosnode.NodeStatus) {
	srv := k.server(st.Cluster)
	if srv == nil || st.Hostname == "" {
		return
	}
	labels := maps.Clone(st.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if st.ControlPlane {
		labels["node-role.kubernetes.io/control-plane"] = ""
	}
	ctx, cancel := context.WithTimeout(k.lab.ctx, 30*time.Second)
	defer cancel()
	if err := srv.RegisterNode(ctx, kubeapi.Node{
		Name: st.Hostname, Labels: labels, KubeletVersion: st.KubeletVersion,
		OSImage: fmt.Sprintf("Talos (%s)", st.Version), Ready: true, Addresses: []netip.Addr{st.Address},
	}); err != nil {
		k.lab.logf("register node %s: %v", st.Hostname, err)
	}
}

func (k *kubernetes) setReady(st talosnode.NodeStatus, ready bool) {
	if srv := k.server(st.Cluster); srv != nil && st.Hostname != "" {
		ctx, cancel := context.WithTimeout(k.lab.ctx, 30*time.Second)
		defer cancel()
		_ = srv.SetReady(ctx, st.Hostname, ready) // a node never registered has nothing to mark
	}
}

func (k *kubernetes) remove(st talosnode.NodeStatus) {
	if srv := k.server(st.Cluster); srv != nil && st.Hostname != "" {
		ctx, cancel := context.WithTimeout(k.lab.ctx, 30*time.Second)
		defer cancel()
		_ = srv.DeleteNode(ctx, st.Hostname) // a node never registered has nothing to delete
	}
}

// KubeAPI returns the Kubernetes API of cluster once it is bootstrapped,
// else nil.
func (l *Lab) KubeAPI(cluster string) *kubeapi.Server { return l.kube.server(cluster) }
