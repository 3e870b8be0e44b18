package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// portWant is one desired port on the cluster network.
type portWant struct {
	name   string
	tags   []string
	detail string
	// pair, when set, makes the port's only allowed address pair the VIP
	// (machine ports); an invalid VIP is one a dry run has not created.
	pair bool
	vip  netip.Addr
}

// reservedPorts makes the kubeapi and ingress VIP ports. They are created
// before any machine port because Neutron hands out the lowest free address.
func (r *netReconciler) reservedPorts(ctx context.Context) error {
	for _, name := range []string{r.inv.names.kubeapi, r.inv.names.ingress} {
		if err := r.port(ctx, portWant{name: name, tags: ClusterTags(r.inv.names.cluster), detail: "reserved VIP"}); err != nil {
			return err
		}
	}
	return nil
}

// machinePorts makes one port per desired machine (concurrently, as many
// at a time as servers are created), letting through the kubeapi VIP on
// control planes and the ingress VIP on workers.
func (r *netReconciler) machinePorts(ctx context.Context) error {
	wants := make([]portWant, len(r.machines))
	for i, m := range r.machines {
		vip := "ingress VIP"
		if m.Role == config.RoleControlPlane {
			vip = "kubeapi VIP"
		}
		wants[i] = portWant{name: m.Hostname, tags: machineTags(m, r.inv.names.cluster), detail: "pair " + vip, pair: true, vip: r.inv.vipFor(m)}
	}
	return errors.Join(provider.FanOut(ctx, len(wants), func(ctx context.Context, i int) error { return r.port(ctx, wants[i]) })...)
}

// port creates w on the cluster subnet with the cluster group, or puts an
// existing port's groups and address pairs right in one update.
func (r *netReconciler) port(ctx context.Context, w portWant) error {
	r.portsMu.Lock()
	p := r.inv.ports[w.name]
	r.portsMu.Unlock()
	if p != nil {
		return r.updatePort(ctx, p, w)
	}
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindPort, Name: w.name, Detail: w.detail}, func(ctx context.Context) error {
		sg := []string{r.inv.sg.ID}
		opts := ports.CreateOpts{
			NetworkID: r.inv.net.ID, Name: w.name, Description: r.inv.owner.description(""), FixedIPs: []ports.IP{{SubnetID: r.inv.subnet.ID}}, SecurityGroups: &sg,
		}
		if w.pair {
			opts.AllowedAddressPairs = []ports.AddressPair{{IPAddress: w.vip.String()}}
		}
		p, err := createOwned(ctx, r.c, r.plan, neutronCreate[ports.Port]{
			lookup: r.c.portLookup(r.inv.net.ID, w.name, w.tags),
			create: func(ctx context.Context) (*ports.Port, error) { return ports.Create(ctx, r.c.network, opts).Extract() },
		}, r.inv.names.cluster)
		if err == nil {
			r.setPort(w.name, p)
		}
		return err
	})
}

// setPort records a port made or updated.
func (r *netReconciler) setPort(name string, p *ports.Port) {
	r.portsMu.Lock()
	defer r.portsMu.Unlock()
	r.inv.ports[name] = p
}

// updatePort moves p onto the cluster group alone (off "default") and
// reconciles its allowed address pair.
func (r *netReconciler) updatePort(ctx context.Context, p *ports.Port, w portWant) error {
	var opts ports.UpdateOpts
	var what []string
	var sgID string
	if r.inv.sg != nil {
		sgID = r.inv.sg.ID
	}
	if !slices.Equal(p.SecurityGroups, []string{sgID}) {
		what = append(what, "security groups -> "+r.inv.names.sg)
	}
	if w.pair {
		have := make([]string, 0, len(p.AllowedAddressPairs))
		for _, ap := range p.AllowedAddressPairs {
			have = append(have, ap.IPAddress)
		}
		want := "(pending)"
		if w.vip.IsValid() {
			want = w.vip.String()
		}
		if !slices.Equal(have, []string{want}) {
			what = append(what, fmt.Sprintf("allowed address pairs %s -> %s", listOrNone(have), want))
		}
	}
	if len(what) == 0 {
		return nil
	}
	return r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindPort, Name: w.name, Detail: strings.Join(what, ", ")}, func(ctx context.Context) error {
		sg := []string{r.inv.sg.ID}
		opts.SecurityGroups = &sg
		if w.pair {
			opts.AllowedAddressPairs = &[]ports.AddressPair{{IPAddress: w.vip.String()}}
		}
		updated, err := ports.Update(ctx, r.c.network, p.ID, opts).Extract()
		if err == nil {
			r.setPort(w.name, updated)
		}
		return err
	})
}

// floatingIPs makes the kubeapi and ingress floating IPs on
// openstack.external_net and (re)associates them with the reserved ports.
func (r *netReconciler) floatingIPs(ctx context.Context) error {
	for _, name := range []string{r.inv.names.kubeapi, r.inv.names.ingress} {
		if err := r.floatingIP(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (r *netReconciler) floatingIP(ctx context.Context, name string) error {
	var portID string
	if p := r.inv.ports[name]; p != nil {
		portID = p.ID
	}
	store := func(f *floatingips.FloatingIP, err error) error {
		if err == nil {
			r.inv.fips[name] = f
		}
		return err
	}
	if f := r.inv.fips[name]; f != nil {
		if portID != "" && f.PortID == portID {
			return nil
		}
		return r.plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: kindFloatingIP, Name: name, Detail: "associate with port " + name}, func(ctx context.Context) error {
			id := r.inv.ports[name].ID
			return store(floatingips.Update(ctx, r.c.network, f.ID, floatingips.UpdateOpts{PortID: &id}).Extract())
		})
	}
	detail := fmt.Sprintf("on %s, for port %s", r.cfg.OpenStack.ExternalNet, name)
	return r.plan.Do(ctx, state.Change{Action: state.ActionCreate, Kind: kindFloatingIP, Name: name, Detail: detail}, func(ctx context.Context) error {
		cluster := r.inv.names.cluster
		return store(createOwned(ctx, r.c, r.plan, neutronCreate[floatingips.FloatingIP]{
			lookup: r.c.fipLookup(cluster, name),
			create: func(ctx context.Context) (*floatingips.FloatingIP, error) {
				return floatingips.Create(ctx, r.c.network, floatingips.CreateOpts{
					Description: r.inv.owner.description(name), FloatingNetworkID: r.inv.external, PortID: r.inv.ports[name].ID,
				}).Extract()
			},
		}, cluster))
	})
}

// reclaimPorts deletes the owned ports of machines no longer desired that
// never got (or no longer have) a server (the orphans, see readPorts); a
// port still bound to a server, or named after an owned server that still
// exists, is left to the nodes phase, which deletes the server first.
func (r *netReconciler) reclaimPorts(ctx context.Context) error {
	for _, p := range r.inv.orphans {
		if err := r.c.deleteNeutron(ctx, r.plan, doomed{kind: kindPort, name: p.Name, id: p.ID, del: r.c.deletePort}); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cloud) deletePort(ctx context.Context, id string) error {
	return ports.Delete(ctx, c.network, id).ExtractErr()
}

func (c *Cloud) deleteFloatingIP(ctx context.Context, id string) error {
	return floatingips.Delete(ctx, c.network, id).ExtractErr()
}
