package proxmox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// ReconcileNetwork checks that the cluster bridge or VNet (and the
// external bridge) exist on every compute node; talosc creates nothing
// there. With managed SDN it reconciles the cluster's EVPN zone, VNet and
// subnet (through plan, sdn_reconcile.go) and verifies the VNet bridge. It
// returns the endpoints and the machines' attachments.
func (c *Cloud) ReconcileNetwork(ctx context.Context, spec provider.NetworkSpec, plan *provider.Plan) (*provider.NetworkResult, error) {
	cluster := c.cluster
	env, err := c.Preflight(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if err := c.checkBridges(ctx, cluster, env); err != nil {
		return nil, err
	}
	if cluster.Proxmox.Network.Cluster.SDN != nil {
		if err := c.reconcileSDN(ctx, cluster, env, plan); err != nil {
			return nil, err
		}
	}
	return networkResult(cluster, spec), nil
}

// CurrentNetwork is what ReconcileNetwork returns, without reading or
// checking anything.
func (c *Cloud) CurrentNetwork(_ context.Context, spec provider.NetworkSpec) (*provider.NetworkResult, error) {
	return networkResult(c.cluster, spec), nil
}

// DestroyNetwork has nothing to remove for a bridge or VNet (they are the
// user's); with managed SDN it removes the cluster's subnet, VNet and zone
// and applies, never the shared controller (sdn_reconcile.go). Destroy
// calls it after the VMs are gone; ValidateTeardown runs its guards
// earlier.
func (c *Cloud) DestroyNetwork(ctx context.Context, plan *provider.Plan) error {
	cluster := c.cluster
	if cluster.Proxmox.Network.Cluster.SDN != nil {
		return c.destroySDN(ctx, cluster, plan)
	}
	return nil
}

// checkBridges refuses a cluster bridge, VNet or external bridge missing
// on a compute node, naming the key, and warns when one's MTU is below
// the configured network MTU (the VM NICs inherit it), with one network
// read per node.
func (c *Cloud) checkBridges(ctx context.Context, cluster *config.Cluster, env *Environment) error {
	net := cluster.Proxmox.Network
	var problems []error
	if net.Cluster.VNet != "" && env.VNetZone == "" {
		problems = append(problems, fmt.Errorf("proxmox.network.cluster.vnet: SDN VNet %q does not exist (or the token lacks SDN.Audit on it); create and apply it, or fix the name", net.Cluster.VNet))
	}
	for _, n := range env.Nodes {
		bridges, err := c.nodeBridges(ctx, n.Name)
		if err != nil {
			return err
		}
		if b := net.Cluster.Bridge; b != "" && !slices.ContainsFunc(bridges, bridgeNamed(b)) {
			problems = append(problems, fmt.Errorf("proxmox.network.cluster.bridge: bridge %q does not exist on node %s; create it there or pick an existing bridge", b, n.Name))
		}
		if ext := net.External; ext != nil && !slices.ContainsFunc(bridges, bridgeNamed(ext.Bridge)) {
			problems = append(problems, fmt.Errorf("proxmox.network.external.bridge: bridge %q does not exist on node %s; create it there or pick an existing bridge", ext.Bridge, n.Name))
		}
		c.warnBridgeMTU(cluster, n.Name, bridges)
	}
	return errors.Join(problems...)
}

// warnBridgeMTU warns about the node's cluster and external bridges whose
// MTU is below network.cluster.mtu or network.external.mtu.
func (c *Cloud) warnBridgeMTU(cluster *config.Cluster, node string, bridges []bridge) {
	check := func(name string, want int, key string) {
		i := slices.IndexFunc(bridges, bridgeNamed(name))
		if i < 0 {
			return
		}
		if have := bridges[i].mtu(); have < want {
			c.opts.Logf("warning: node %s: bridge %s has MTU %d, below %s %d; the VM NICs inherit the bridge MTU, so larger packets are dropped: raise the bridge's MTU or lower %s",
				node, name, have, key, want, key)
		}
	}
	check(clusterBridge(cluster), cluster.Network.Cluster.MTU, "network.cluster.mtu")
	if ext := cluster.Network.External; ext != nil && cluster.Proxmox.Network.External != nil {
		check(cluster.Proxmox.Network.External.Bridge, ext.MTU, "network.external.mtu")
	}
}

// bridge is a bridge or VNet as nodes/<node>/network lists it.
type bridge struct {
	Iface string `json:"iface"`
	// MTU is absent for the default 1500; PVE answers it as a string.
	MTU json.Number `json:"mtu"`
}

// mtu is the bridge's MTU, 1500 when it reports none.
func (b bridge) mtu() int {
	if n, err := strconv.Atoi(b.MTU.String()); err == nil && n > 0 {
		return n
	}
	return config.DefaultMTU
}

func bridgeNamed(name string) func(bridge) bool {
	return func(b bridge) bool { return b.Iface == name }
}

// nodeBridges lists the bridges and VNets of node.
func (c *Cloud) nodeBridges(ctx context.Context, node string) ([]bridge, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var out []bridge
	if err := c.client.Get(ctx, "/nodes/"+url.PathEscape(node)+"/network?type=any_bridge", &out); err != nil {
		return nil, fmt.Errorf("proxmox: list the bridges of node %s: %w", node, err)
	}
	return out, nil
}

// networkResult is the endpoints and attachments: the API VIP of
// network.cluster or network.external, the first ingress_pool address,
// and each machine with its managed-SDN static address (none on a
// DHCP-backed bridge or VNet: the guest agent reports it later).
func networkResult(cluster *config.Cluster, spec provider.NetworkSpec) *provider.NetworkResult {
	px := cluster.Proxmox.Network.Cluster
	res := &provider.NetworkResult{Network: px.Bridge + px.VNet}
	if px.SDN != nil {
		res.Network, res.Subnet = px.SDN.Name, ownSDN(cluster).subnet
	}
	vip := cluster.Network.Cluster.KubeAPIVIP
	if ext := cluster.Network.External; ext != nil {
		if ext.KubeAPIVIP.IsValid() {
			vip = ext.KubeAPIVIP
		}
		if ext.IngressPool.IsValid() {
			res.Ingress = provider.Endpoint{VIP: ext.IngressPool.Start, Advertised: ext.IngressPool.Start.String()}
		}
	}
	if vip.IsValid() {
		res.Kubernetes = provider.Endpoint{VIP: vip, Advertised: vip.String()}
	}
	desired := map[string]config.Machine{}
	for _, m := range cluster.Hostnames() {
		desired[m.Hostname] = m
	}
	for _, m := range spec.Machines {
		a := provider.MachineAddress{Hostname: m.Hostname}
		if addr, ok := cluster.SDNAddress(desired[m.Hostname]); ok {
			a.Address = addr
		}
		res.Machines = append(res.Machines, a)
	}
	return res
}
