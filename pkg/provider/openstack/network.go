package openstack

import (
	"context"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// Change kinds of the network half (reference §5.2).
const (
	kindSecurityGroup   = "openstack:security-group"
	kindRule            = "openstack:security-group-rule"
	kindNetwork         = "openstack:network"
	kindSubnet          = "openstack:subnet"
	kindRouter          = "openstack:router"
	kindRouterInterface = "openstack:router-interface"
	kindPort            = "openstack:port"
	kindFloatingIP      = "openstack:floating-ip"
)

// netNames are the deterministic names of one cluster's network resources
// (reference §5.2).
type netNames struct {
	cluster, sg, net, subnet, router, kubeapi, ingress string
}

func namesOf(cluster string) netNames {
	return netNames{
		cluster: cluster, sg: cluster, net: cluster + "-net", subnet: cluster + "-subnet", router: cluster + "-router",
		kubeapi: cluster + "-kubeapi", ingress: cluster + "-ingress",
	}
}

// ReconcileNetwork is provider.Networks.ReconcileNetwork. Every read
// (and every ownership refusal) happens before the first change; then, in
// order: the unused second resources of a name the reads found (dropTwins),
// the security group and its rules (adds before deletes), network,
// subnet, router and its interface, the reserved VIP ports (before any
// machine port, so they get the lowest addresses), floating IPs, machine
// ports, and the reclaim of orphaned machine ports. On failure the result
// holds what exists so far.
func (c *Cloud) ReconcileNetwork(ctx context.Context, spec provider.NetworkSpec, plan *provider.Plan) (*provider.NetworkResult, error) {
	inv, err := c.readNetwork(ctx, spec)
	if err != nil {
		return nil, err
	}
	r := &netReconciler{c: c, cfg: c.cluster, machines: spec.Machines, plan: plan, inv: inv}
	for _, step := range []func(context.Context) error{
		r.dropTwins, r.finishTags, r.securityGroup, r.rules, r.network, r.subnet, r.router, r.routerInterface,
		r.reservedPorts, r.floatingIPs, r.machinePorts, r.reclaimPorts,
	} {
		if err := step(ctx); err != nil {
			return c.networkResult(inv, spec.Machines), err
		}
	}
	return c.networkResult(inv, spec.Machines), nil
}

// CurrentNetwork is provider.Networks.CurrentNetwork: the reads of
// ReconcileNetwork, without a change.
func (c *Cloud) CurrentNetwork(ctx context.Context, spec provider.NetworkSpec) (*provider.NetworkResult, error) {
	inv, err := c.readNetwork(ctx, spec)
	if err != nil {
		return nil, err
	}
	return c.networkResult(inv, spec.Machines), nil
}

// networkResult is inv's result, in the credential's project.
func (c *Cloud) networkResult(inv *netInventory, machines []provider.MachineNet) *provider.NetworkResult {
	res := inv.result(machines)
	res.Project = c.project
	return res
}

// result renders what inv holds; missing pieces are zero values.
func (inv *netInventory) result(machines []provider.MachineNet) *provider.NetworkResult {
	res := &provider.NetworkResult{
		Kubernetes: inv.endpoint(inv.names.kubeapi),
		Ingress:    inv.endpoint(inv.names.ingress),
		Machines:   make([]provider.MachineAddress, 0, len(machines)),
	}
	if inv.net != nil {
		res.Network = inv.net.ID
	}
	if inv.subnet != nil {
		res.Subnet = inv.subnet.ID
	}
	if inv.sg != nil {
		res.SecurityGroup = inv.sg.ID
	}
	for _, m := range machines {
		ma := provider.MachineAddress{Hostname: m.Hostname}
		if p := inv.ports[m.Hostname]; p != nil {
			ma.Attachment, ma.Address = p.ID, inv.portAddr(p)
		}
		res.Machines = append(res.Machines, ma)
	}
	return res
}

// endpoint is a reserved port's VIP and its floating IP (both named name).
func (inv *netInventory) endpoint(name string) provider.Endpoint {
	var ep provider.Endpoint
	if p := inv.ports[name]; p != nil {
		ep.VIP, ep.Reserved = inv.portAddr(p), p.ID
	}
	if f := inv.fips[name]; f != nil {
		ep.Advertised = f.FloatingIP
	}
	return ep
}

// machineTags are the ownership tags of a machine's port.
func machineTags(m provider.MachineNet, cluster string) []string {
	return NodeTags(config.Machine{Hostname: m.Hostname, Role: m.Role, Pool: m.Pool}, cluster)
}

// vipFor is the VIP a machine's port lets through: the kubeapi VIP on
// control planes, the ingress VIP on workers.
func (inv *netInventory) vipFor(m provider.MachineNet) netip.Addr {
	if m.Role == config.RoleControlPlane {
		return inv.endpoint(inv.names.kubeapi).VIP
	}
	return inv.endpoint(inv.names.ingress).VIP
}

// ValidateTeardown has nothing to check on OpenStack: every owned network
// resource can be deleted once the servers are gone.
func (c *Cloud) ValidateTeardown(context.Context) error { return nil }
