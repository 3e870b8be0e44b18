package nodes

import (
	"context"
	"net/netip"
	"slices"
	"sync"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// observed is what one run knows of the cluster, a value built from
// plain inputs (newObserved) once the run is validated and refreshed
// explicitly: the owned inventory, the network phase's endpoints and
// attachments, the boot image, the Kubernetes nodes and what each node
// runs. It holds no session: those are run's clients.
type observed struct {
	inv   *provider.Inventory
	net   *provider.NetworkResult
	image provider.Image
	// nodes are the Kubernetes nodes as last listed (discover, then after
	// every change to them); nodesErr is why the last list failed.
	nodes    []kube.Node
	nodesErr error

	// mu guards running: workers upgrade concurrently.
	mu sync.Mutex
	// running is what each existing desired node runs, by hostname (read
	// at the versions step; kept current by the upgrades).
	running map[string]running

	// images are the Kubernetes images of each existing node's running
	// configuration, by hostname, as last read or applied (by one
	// goroutine at a time).
	images map[string]machineconfig.KubernetesImages
}

// newObserved is the view of inv, net, image and the Kubernetes nodes
// (any may be empty: not read yet); what each node runs is read into it
// later (readRunning), once the cluster is known to be up.
func newObserved(inv *provider.Inventory, net *provider.NetworkResult, image provider.Image, nodes []kube.Node) *observed {
	return &observed{inv: inv, net: net, image: image, nodes: nodes, images: map[string]machineconfig.KubernetesImages{}}
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

// refreshInventory reads the owned machines of cloud again.
func (o *observed) refreshInventory(ctx context.Context, cloud provider.Cloud) error {
	inv, err := cloud.Inventory(ctx)
	if err != nil {
		return err
	}
	o.inv = inv
	return nil
}

// refreshNodes lists the Kubernetes nodes through c; a failed list is kept as
// nodesErr (a node's state is then unknown, never "absent").
func (o *observed) refreshNodes(ctx context.Context, c *clients) {
	kc, err := c.kubeClient()
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
