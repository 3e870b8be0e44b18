package nodes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// observed is what one run knows of the cluster, built once (validate and
// discover) and refreshed explicitly: the owned inventory, the network
// phase's endpoints and attachments, the boot image, the Kubernetes nodes,
// and one memoised Kubernetes client and Talos session (through the first
// control plane) that every step shares.
type observed struct {
	r     *run
	seams seams
	inv   *provider.Inventory
	net   *provider.NetworkResult
	image provider.Image
	// nodes are the Kubernetes nodes as last listed (discover, then after
	// every change to them); nodesErr is why the last list failed.
	nodes    []kube.Node
	nodesErr error

	// running is what each existing desired node runs, by hostname (read
	// at the versions step; kept current by the upgrades); mu guards it.
	running map[string]running

	// mu guards the memoised clients: a worker pass asks for them from
	// several goroutines, possibly before the first dial.
	mu    sync.Mutex
	kube  kubeAPI
	talos talosAPI
	// talosAt is the endpoint talos was dialled at.
	talosAt string

	// images are the Kubernetes images of each existing node's running
	// configuration, by hostname, as last read or applied (by one
	// goroutine at a time).
	images map[string]machineconfig.KubernetesImages
}

func newObserved(r *run, s seams) *observed {
	return &observed{r: r, seams: s, images: map[string]machineconfig.KubernetesImages{}}
}

// close ends the Talos session.
func (o *observed) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closeTalos()
}

// closeTalos ends the Talos session; o.mu is held.
func (o *observed) closeTalos() {
	if o.talos != nil {
		_ = o.talos.Close()
		o.talos, o.talosAt = nil, ""
	}
}

// kubeconfigPath is the cluster directory's kubeconfig and whether it
// exists.
func (o *observed) kubeconfigPath() (string, bool) {
	return phase.ClientFile(o.r.cfg, config.KubeconfigFile)
}

// kubeClient is the memoised client of the kubeconfig.
func (o *observed) kubeClient() (kubeAPI, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.kube != nil {
		return o.kube, nil
	}
	path, _ := o.kubeconfigPath()
	kc, err := o.seams.openKube(path)
	if err != nil {
		return nil, err
	}
	o.kube = kc
	return kc, nil
}

// forgetKube drops the memoised client (the kubeconfig was rewritten).
func (o *observed) forgetKube() {
	o.mu.Lock()
	o.kube = nil
	o.mu.Unlock()
}

// talosSession is the memoised Talos session through the first control
// plane's real address (never the VIP, I-A1).
func (o *observed) talosSession(ctx context.Context) (talosAPI, string, error) {
	cp1, ok := o.address(o.r.cp1().Hostname)
	if !ok {
		return nil, "", fmt.Errorf("no address known for %s: the network phase reported none", o.r.cp1().Hostname)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.talos != nil && o.talosAt == cp1 {
		return o.talos, cp1, nil
	}
	if o.r.id == nil {
		return nil, "", errors.New("the cluster identity is not loaded")
	}
	o.closeTalos()
	c, err := o.seams.dialTalos(ctx, o.r.id, o.r.cfg.Name, cp1)
	if err != nil {
		return nil, "", err
	}
	o.talos, o.talosAt = c, cp1
	return c, cp1, nil
}

// setRunning records what host runs after an upgrade (workers upgrade
// concurrently).
func (o *observed) setRunning(host string, v running) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running == nil {
		o.running = map[string]running{}
	}
	o.running[host] = v
}

// runningOf is what host runs, when it exists.
func (o *observed) runningOf(host string) (running, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.running[host]
	return v, ok
}

// clients are the Talos session and the Kubernetes client together.
func (o *observed) clients(ctx context.Context) (talosAPI, kubeAPI, error) {
	c, _, err := o.talosSession(ctx)
	if err != nil {
		return nil, nil, err
	}
	kc, err := o.kubeClient()
	return c, kc, err
}

// refreshInventory reads the owned machines again.
func (o *observed) refreshInventory(ctx context.Context) error {
	inv, err := o.r.cloud.Inventory(ctx)
	if err != nil {
		return err
	}
	o.inv = inv
	return nil
}

// refreshNodes lists the Kubernetes nodes; a failed list is kept as
// nodesErr (a node's state is then unknown, never "absent").
func (o *observed) refreshNodes(ctx context.Context) {
	kc, err := o.kubeClient()
	if err == nil {
		o.nodes, err = kc.Nodes(ctx)
	}
	o.nodesErr = err
}

// kubeNode returns the Kubernetes node called name.
func (o *observed) kubeNode(name string) (kube.Node, bool) {
	i := slices.IndexFunc(o.nodes, func(n kube.Node) bool { return n.Name == name })
	if i < 0 {
		return kube.Node{}, false
	}
	return o.nodes[i], true
}

// attachment returns the network phase's attachment of hostname.
func (o *observed) attachment(hostname string) (provider.MachineAddress, bool) {
	if o.net == nil {
		return provider.MachineAddress{}, false
	}
	for _, a := range o.net.Machines {
		if a.Hostname == hostname {
			return a, true
		}
	}
	return provider.MachineAddress{}, false
}

// address is a machine's real cluster address (I-S12 without discovery):
// the network phase's, else the provider inventory's, else its Kubernetes
// node's InternalIP; never the API VIP.
func (o *observed) address(hostname string) (string, bool) {
	if a, ok := o.attachment(hostname); ok && a.Address.IsValid() {
		return a.Address.String(), true
	}
	if o.inv != nil {
		if m, ok := o.inv.Find(hostname); ok && m.Address.IsValid() {
			return m.Address.String(), true
		}
	}
	if n, ok := o.kubeNode(hostname); ok && n.InternalIP != "" && n.InternalIP != o.vip() {
		return n.InternalIP, true
	}
	return "", false
}

// vip is the Kubernetes API VIP, "" when unknown.
func (o *observed) vip() string { return vipString(o.netKubernetes().VIP) }

func (o *observed) netKubernetes() provider.Endpoint {
	if o.net == nil {
		return provider.Endpoint{}
	}
	return o.net.Kubernetes
}

// hasEndpoint reports that the network phase allocated the Kubernetes API
// endpoint (VIP and advertised address) configurations are generated for.
func (o *observed) hasEndpoint() bool {
	k := o.netKubernetes()
	return k.VIP.IsValid() && k.Advertised != ""
}

func vipString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
