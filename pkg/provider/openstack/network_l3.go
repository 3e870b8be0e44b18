package openstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// netReconciler runs the steps of ReconcileNetwork over what was read.
// Each step mutates only through plan and records what it creates in inv.
type netReconciler struct {
	c        *Cloud
	cfg      *config.Cluster
	machines []provider.MachineNet
	plan     *provider.Plan
	inv      *netInventory
	// portsMu guards inv.ports while machine ports are made concurrently.
	portsMu sync.Mutex
}

// network creates the cluster network stating network.cluster.mtu, and
// warns when an existing one carries less.
func (r *netReconciler) network(ctx context.Context) error {
	n, want := r.inv.names, r.cfg.Network.Cluster.MTU
	if have := r.inv.net; have != nil {
		if have.MTU > 0 && have.MTU < want {
			r.c.opts.Logf("openstack: network %s carries mtu %d, less than network.cluster.mtu %d; set network.cluster.mtu to %d or recreate the network",
				n.net, have.MTU, want, have.MTU)
		}
		return nil
	}
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindNetwork, Name: n.net, Detail: fmt.Sprintf("mtu %d", want)}, func(ctx context.Context) error {
		created, err := createOwned(ctx, r.c, r.plan, neutronCreate[network]{
			lookup: r.c.netLookup(n),
			create: func(ctx context.Context) (*network, error) {
				up := true
				var created network
				opts := mtu.CreateOptsExt{CreateOptsBuilder: networks.CreateOpts{Name: n.net, Description: r.inv.owner.description(""), AdminStateUp: &up}, MTU: want}
				if err := networks.Create(ctx, r.c.network, opts).ExtractInto(&created); err != nil {
					if gophercloud.ResponseCodeIs(err, http.StatusBadRequest) && strings.Contains(err.Error(), "MTU") {
						return nil, fmt.Errorf("network.cluster.mtu %d is more than the cloud allows; lower network.cluster.mtu: %w", want, err)
					}
					return nil, err
				}
				return &created, nil
			},
		}, n.cluster)
		if err == nil {
			r.inv.net = created
		}
		return err
	})
}

// subnet creates the IPv4 cluster subnet, or updates its DNS servers in place.
func (r *netReconciler) subnet(ctx context.Context) error {
	n := r.inv.names
	dns := make([]string, 0, len(r.cfg.Network.DNS))
	for _, a := range r.cfg.Network.DNS {
		dns = append(dns, a.String())
	}
	store := func(sn *subnets.Subnet, err error) error {
		if err == nil {
			r.inv.subnet = sn
		}
		return err
	}
	if sn := r.inv.subnet; sn != nil {
		if slices.Equal(sn.DNSNameservers, dns) {
			return nil
		}
		detail := fmt.Sprintf("dns %s -> %s", listOrNone(sn.DNSNameservers), listOrNone(dns))
		return r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindSubnet, Name: n.subnet, Detail: detail}, func(ctx context.Context) error {
			return store(subnets.Update(ctx, r.c.network, sn.ID, subnets.UpdateOpts{DNSNameservers: &dns}).Extract())
		})
	}
	cidr := r.cfg.Network.Cluster.CIDR.String()
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindSubnet, Name: n.subnet, Detail: cidr}, func(ctx context.Context) error {
		return store(createOwned(ctx, r.c, r.plan, neutronCreate[subnets.Subnet]{
			lookup: r.c.subnetLookup(n),
			create: func(ctx context.Context) (*subnets.Subnet, error) {
				return subnets.Create(ctx, r.c.network, subnets.CreateOpts{
					NetworkID: r.inv.net.ID, Name: n.subnet, Description: r.inv.owner.description(""), CIDR: cidr, IPVersion: gophercloud.IPv4, DNSNameservers: dns,
				}).Extract()
			},
		}, n.cluster))
	})
}

func listOrNone(dns []string) string {
	if len(dns) == 0 {
		return "none"
	}
	return strings.Join(dns, ",")
}

// router creates the cluster router with its gateway on
// openstack.external_net, or moves an existing router's gateway there.
func (r *netReconciler) router(ctx context.Context) error {
	n, ext, extName := r.inv.names, r.inv.external, r.cfg.OpenStack.ExternalNet
	gw := &routers.GatewayInfo{NetworkID: ext}
	store := func(rt *routers.Router, err error) error {
		if err == nil {
			r.inv.router = rt
		}
		return err
	}
	if rt := r.inv.router; rt != nil {
		if rt.GatewayInfo.NetworkID == ext {
			return nil
		}
		return r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindRouter, Name: n.router, Detail: "external gateway -> " + extName}, func(ctx context.Context) error {
			return store(routers.Update(ctx, r.c.network, rt.ID, routers.UpdateOpts{GatewayInfo: gw}).Extract())
		})
	}
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindRouter, Name: n.router, Detail: "external gateway " + extName}, func(ctx context.Context) error {
		return store(createOwned(ctx, r.c, r.plan, neutronCreate[routers.Router]{
			lookup: r.c.routerLookup(n),
			create: func(ctx context.Context) (*routers.Router, error) {
				up := true
				return routers.Create(ctx, r.c.network, routers.CreateOpts{Name: n.router, Description: r.inv.owner.description(""), AdminStateUp: &up, GatewayInfo: gw}).Extract()
			},
		}, n.cluster))
	})
}

// routerInterface attaches the router to the subnet. Neutron answering
// that it already is (409, or 400 "already has a port") is success; a lost
// answer is settled (see settle) on the router's ports on the subnet.
func (r *netReconciler) routerInterface(ctx context.Context) error {
	if r.inv.iface {
		return nil
	}
	n := r.inv.names
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindRouterInterface, Name: n.router, Detail: "subnet " + n.subnet}, func(ctx context.Context) error {
		router, subnet := r.inv.router.ID, r.inv.subnet.ID
		_, err := settle(ctx, r.c, lateCreate[string]{
			what: "interface of router " + n.router + " on subnet " + n.subnet,
			create: func(ctx context.Context) (string, error) {
				info, err := routers.AddInterface(ctx, r.c.network, router, routers.AddInterfaceOpts{SubnetID: subnet}).Extract()
				switch {
				case err == nil:
					return info.PortID, nil
				case alreadyAttached(err):
					return "", nil
				}
				return "", err
			},
			find: func(ctx context.Context) ([]string, error) {
				list, err := listAll(ctx, ports.List(r.c.network, ports.ListOpts{DeviceID: router, DeviceOwner: ownerRouterInterface}), ports.ExtractPorts)
				var ids []string
				for _, p := range list {
					if onSubnet(p, subnet) {
						ids = append(ids, p.ID)
					}
				}
				return ids, err
			},
			id: func(id string) string { return id },
		})
		r.inv.iface = err == nil
		return err
	})
}

// alreadyAttached reports Neutron's answers to an interface that exists.
func alreadyAttached(err error) bool {
	return isConflict(err) || gophercloud.ResponseCodeIs(err, http.StatusBadRequest) && strings.Contains(err.Error(), "already has a port")
}

func (c *Cloud) deleteNetwork(ctx context.Context, id string) error {
	return networks.Delete(ctx, c.network, id).ExtractErr()
}

func (c *Cloud) deleteSubnet(ctx context.Context, id string) error {
	return subnets.Delete(ctx, c.network, id).ExtractErr()
}

func (c *Cloud) deleteRouter(ctx context.Context, id string) error {
	return routers.Delete(ctx, c.network, id).ExtractErr()
}
