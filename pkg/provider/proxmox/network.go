package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// ReconcileNetwork checks that the cluster bridge or VNet (and the
// external bridge) exist on every compute node; talosc creates nothing
// there. With managed SDN it reconciles the cluster's EVPN zone, VNet and
// subnet (through plan, sdn_reconcile.go) and verifies the VNet bridge. It
// returns the endpoints and the machines' attachments.
func (c *Cloud) ReconcileNetwork(ctx context.Context, spec provider.NetworkSpec, plan *provider.Plan) (*provider.NetworkResult, error) {
	cluster := spec.Cluster
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
	return networkResult(spec), nil
}

// CurrentNetwork is what ReconcileNetwork returns, without reading or
// checking anything.
func (c *Cloud) CurrentNetwork(_ context.Context, spec provider.NetworkSpec) (*provider.NetworkResult, error) {
	return networkResult(spec), nil
}

// DestroyNetwork has nothing to remove for a bridge or VNet (they are the
// user's); with managed SDN it removes the cluster's subnet, VNet and zone
// and applies, never the shared controller (sdn_reconcile.go). Destroy
// calls it after the VMs are gone; ValidateTeardown runs its guards
// earlier.
func (c *Cloud) DestroyNetwork(ctx context.Context, cluster *config.Cluster, plan *provider.Plan) error {
	if cluster.Proxmox.Network.Cluster.SDN != nil {
		return c.destroySDN(ctx, cluster, plan)
	}
	return nil
}

// checkBridges refuses a cluster bridge, VNet or external bridge missing
// on a compute node, naming the key.
func (c *Cloud) checkBridges(ctx context.Context, cluster *config.Cluster, env *Environment) error {
	net := cluster.Proxmox.Network
	var problems []error
	if net.Cluster.VNet != "" && env.VNetZone == "" {
		problems = append(problems, fmt.Errorf("proxmox.network.cluster.vnet: SDN VNet %q does not exist (or the token lacks SDN.Audit on it); create and apply it, or fix the name", net.Cluster.VNet))
	}
	for _, n := range env.Nodes {
		var ifaces []goproxmox.NodeNetwork
		if err := c.client.Get(ctx, "/nodes/"+url.PathEscape(n.Name)+"/network?type=any_bridge", &ifaces); err != nil {
			return fmt.Errorf("proxmox: list the bridges of node %s: %w", n.Name, err)
		}
		has := func(name string) bool {
			for _, i := range ifaces {
				if i.Iface == name {
					return true
				}
			}
			return false
		}
		if b := net.Cluster.Bridge; b != "" && !has(b) {
			problems = append(problems, fmt.Errorf("proxmox.network.cluster.bridge: bridge %q does not exist on node %s; create it there or pick an existing bridge", b, n.Name))
		}
		if ext := net.External; ext != nil && !has(ext.Bridge) {
			problems = append(problems, fmt.Errorf("proxmox.network.external.bridge: bridge %q does not exist on node %s; create it there or pick an existing bridge", ext.Bridge, n.Name))
		}
	}
	return errors.Join(problems...)
}

// networkResult is the endpoints and attachments: the API VIP of
// network.cluster or network.external, the first ingress_pool address,
// and each machine with its managed-SDN static address (none on a
// DHCP-backed bridge or VNet: the guest agent reports it later).
func networkResult(spec provider.NetworkSpec) *provider.NetworkResult {
	cluster := spec.Cluster
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
