package proxmox

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// deleteFunc stages the deletion of one SDN object: its kind, id key, id,
// the path of its parent listing, and the change's detail.
type deleteFunc func(kind, idKey, id, parent, detail string) error

// deleteSDN deletes the SDN object ch names from the listing at parent.
// A delete whose answer was lost is judged by the staged config: a
// repeated delete would answer that the object does not exist.
func (c *Cloud) deleteSDN(ctx context.Context, plan *provider.Plan, ch state.Change, idKey, parent string) error {
	id := ch.Name
	return plan.Do(ctx, ch, func(ctx context.Context) error {
		return c.settle(ctx, "delete SDN "+idKey+" "+id, func(ctx context.Context) error {
			return c.client.Delete(ctx, parent+"/"+url.PathEscape(id), nil)
		}, func(ctx context.Context) (bool, error) {
			objs, err := c.listSDN(ctx, parent, idKey)
			return err == nil && !objs[id].exists(), err
		})
	})
}

// destroyVNet deletes the cluster's subnet and, when it holds no other
// subnets, its VNet; a VNet without the cluster's alias or in another
// zone is left alone. It reports whether the VNet is gone.
func (c *Cloud) destroyVNet(v *sdnView, own sdnIDs, cluster string, del deleteFunc) (bool, error) {
	vn := v.vnets[own.vnet]
	if !vn.exists() {
		return true, nil
	}
	if vn.eff["alias"] != SDNAlias(cluster) || vn.eff["zone"] != own.zone {
		return false, nil
	}
	var foreignSubnets []string
	for _, id := range sortedKeys(v.subnets[own.vnet]) {
		if id != own.subnet && v.subnets[own.vnet][id].exists() {
			foreignSubnets = append(foreignSubnets, id)
		}
	}
	base := "/cluster/sdn/vnets/" + url.PathEscape(own.vnet)
	if v.subnets[own.vnet][own.subnet].exists() {
		if err := del(KindSDNSubnet, "subnet", own.subnet, base+"/subnets", own.cidr); err != nil {
			return false, err
		}
	}
	if len(foreignSubnets) > 0 {
		c.opts.Logf("warning: SDN VNet %s keeps subnets talosc does not manage (%s), so it and zone %s are kept", own.vnet, strings.Join(foreignSubnets, ", "), own.zone)
		return false, nil
	}
	if err := del(KindSDNVNet, "vnet", own.vnet, "/cluster/sdn/vnets", "zone "+own.zone); err != nil {
		return false, err
	}
	return true, nil
}

// destroyZone deletes the cluster's zone once its VNet is gone, when the
// zone is an EVPN zone on the cluster's controller that holds no other
// VNets; never the controller.
func (c *Cloud) destroyZone(v *sdnView, own sdnIDs, del deleteFunc) error {
	z := v.zones[own.zone]
	if !z.exists() || z.eff["type"] != config.SDNZoneEVPN || z.eff["controller"] != own.controller {
		return nil
	}
	others := slices.ContainsFunc(sortedKeys(v.vnets), func(id string) bool {
		return id != own.vnet && v.vnets[id].exists() && v.vnets[id].eff["zone"] == own.zone
	})
	if others {
		c.opts.Logf("warning: SDN zone %s holds VNets talosc does not manage, so it is kept", own.zone)
		return nil
	}
	return del(KindSDNZone, "zone", own.zone, "/cluster/sdn/zones", "controller "+own.controller+" is kept")
}
