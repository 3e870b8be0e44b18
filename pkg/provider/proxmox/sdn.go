package proxmox

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/talosc/talosc/pkg/config"
)

// Change kinds of managed EVPN SDN (reference §5.3).
const (
	KindSDNController = "proxmox:sdn-controller"
	KindSDNZone       = "proxmox:sdn-zone"
	KindSDNVNet       = "proxmox:sdn-vnet"
	KindSDNSubnet     = "proxmox:sdn-subnet"
	KindSDNApply      = "proxmox:sdn-apply"
)

// SDN pending states, as GET ...?pending=1 reports them.
const (
	sdnNew     = "new"
	sdnChanged = "changed"
	sdnDeleted = "deleted"
)

// SDNAlias is the VNet alias that marks a VNet as the cluster's own.
func SDNAlias(cluster string) string { return "managed-by taloscluster cluster " + cluster }

// sdnObj is one SDN object read with pending=1: its pending state ("" when
// applied) and its effective fields (running values with the staged ones
// laid over them; nil when it is staged for deletion).
type sdnObj struct {
	id    string
	state string
	eff   map[string]string
}

// exists reports whether the object is in the staged (effective) config.
func (o *sdnObj) exists() bool { return o != nil && o.state != sdnDeleted }

// sdnView is the whole SDN configuration, effective = config ∪ pending.
type sdnView struct {
	controllers, zones, vnets map[string]*sdnObj
	// subnets are by VNet, then subnet id.
	subnets map[string]map[string]*sdnObj
}

// sdnMeta are the fields of a listing that are not object properties
// (besides the id key); subnets add what PVE derives from their id.
var (
	sdnMeta       = []string{"digest", "state", "pending"}
	sdnSubnetMeta = []string{"id", "zone", "network", "mask", "cidr"}
)

// readSDN reads controllers, zones, VNets and every VNet's subnets with
// pending=1.
func (c *Cloud) readSDN(ctx context.Context) (*sdnView, error) {
	v := &sdnView{subnets: map[string]map[string]*sdnObj{}}
	var err error
	if v.controllers, err = c.listSDN(ctx, "/cluster/sdn/controllers", "controller"); err != nil {
		return nil, err
	}
	if v.zones, err = c.listSDN(ctx, "/cluster/sdn/zones", "zone"); err != nil {
		return nil, err
	}
	if v.vnets, err = c.listSDN(ctx, "/cluster/sdn/vnets", "vnet"); err != nil {
		return nil, err
	}
	for _, id := range sortedKeys(v.vnets) {
		if v.subnets[id], err = c.listSDN(ctx, "/cluster/sdn/vnets/"+url.PathEscape(id)+"/subnets", "subnet"); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// listSDN lists one kind with pending=1 and merges each object's pending
// values over its running ones.
func (c *Cloud) listSDN(ctx context.Context, path, idKey string) (map[string]*sdnObj, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var list []map[string]any
	if err := c.client.Get(ctx, path+"?pending=1", &list); err != nil {
		return nil, fmt.Errorf("proxmox: list the SDN %s (%s): %w", strings.TrimPrefix(path, "/cluster/sdn/"), path, err)
	}
	out := map[string]*sdnObj{}
	for _, raw := range list {
		id := sdnString(raw[idKey])
		if id == "" {
			continue
		}
		o := &sdnObj{id: id, state: sdnString(raw["state"]), eff: map[string]string{}}
		for k, val := range raw {
			if k != idKey && !slices.Contains(sdnMeta, k) && (idKey != "subnet" || !slices.Contains(sdnSubnetMeta, k)) {
				o.eff[k] = sdnString(val)
			}
		}
		if p, ok := raw["pending"].(map[string]any); ok {
			for k, val := range p {
				if s := sdnString(val); s == sdnDeleted {
					delete(o.eff, k)
				} else {
					o.eff[k] = s
				}
			}
		}
		if o.state == sdnDeleted {
			o.eff = nil
		}
		out[id] = o
	}
	return out, nil
}

// sdnString renders a JSON value as PVE's config holds it.
func sdnString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if x {
			return "1"
		}
		return "0"
	default:
		return fmt.Sprint(x)
	}
}

// sdnIDs are the ids of the cluster's own SDN objects.
type sdnIDs struct {
	controller, zone, vnet, subnet, cidr string
}

func ownSDN(cluster *config.Cluster) sdnIDs {
	s := cluster.Proxmox.Network.Cluster.SDN
	cidr := cluster.Network.Cluster.CIDR.Masked()
	return sdnIDs{
		controller: s.Controller, zone: s.Name, vnet: s.Name, cidr: cidr.String(),
		subnet: s.Name + "-" + cidr.Addr().String() + "-" + strconv.Itoa(cidr.Bits()),
	}
}

// pendingCheck sorts the SDN objects staged but not applied into other
// administrators' changes (foreign: never committed by talosc) and
// changes or deletions staged on the cluster's own objects or the shared
// controller (refused: committing them could pull the network from under
// running VMs). Pending "new" objects of the cluster are resumable and
// reported by the returned bool. With destroying, the cluster's own
// objects may be pending anything (destroy deletes them anyway).
func pendingCheck(v *sdnView, own sdnIDs, destroying bool) (resumable bool, err error) {
	if err := sharedControllerPending(v, own); err != nil {
		return false, err
	}
	p := pendingSort{destroying: destroying}
	for _, id := range sortedKeys(v.controllers) {
		p.see("controller", id, v.controllers[id].state, id == own.controller)
	}
	for _, id := range sortedKeys(v.zones) {
		p.see("zone", id, v.zones[id].state, id == own.zone)
	}
	for _, id := range sortedKeys(v.vnets) {
		p.see("vnet", id, v.vnets[id].state, id == own.vnet)
	}
	for _, vnet := range sortedKeys(v.subnets) {
		for _, id := range sortedKeys(v.subnets[vnet]) {
			p.see("subnet", id, v.subnets[vnet][id].state, vnet == own.vnet && id == own.subnet)
		}
	}
	if len(p.foreign) > 0 {
		return false, fmt.Errorf("unapplied Proxmox SDN changes exist (%s); talosc never commits another administrator's SDN changes: apply or revert them in Datacenter > SDN, then run again",
			strings.Join(p.foreign, ", "))
	}
	if len(p.refused) > 0 {
		return false, fmt.Errorf("refusing to commit pending SDN state on the cluster's own %s; apply or revert it in Datacenter > SDN (never commit staged deletions under running VMs)",
			strings.Join(p.refused, ", "))
	}
	return p.resumable, nil
}

// sharedControllerPending refuses pending changes or deletions on the
// cluster's controller, which other zones share.
func sharedControllerPending(v *sdnView, own sdnIDs) error {
	o, ok := v.controllers[own.controller]
	if !ok || o.state == sdnNew || o.state == "" {
		return nil
	}
	return fmt.Errorf("refusing to commit pending SDN state on the shared controller %s (%s); apply or revert it in Datacenter > SDN first", own.controller, o.state)
}

// pendingSort collects pendingCheck's verdicts, one SDN object at a time.
type pendingSort struct {
	destroying       bool
	foreign, refused []string
	resumable        bool
}

// see sorts one object by its pending state and whether it is the
// cluster's own.
func (p *pendingSort) see(what, id, state string, mine bool) {
	switch {
	case state == "":
	case !mine:
		p.foreign = append(p.foreign, fmt.Sprintf("%s %s %s", what, id, state))
	case state == sdnNew || p.destroying:
		p.resumable = true
	default:
		p.refused = append(p.refused, fmt.Sprintf("%s %s (%s)", what, id, state))
	}
}

// sdnKey is the cluster.yaml key of the managed SDN, named in errors.
const sdnKey = "proxmox.network.cluster.sdn"

// checkAdoption refuses VNI collisions and SDN objects talosc may not
// take over: a VNet without the cluster's alias, a zone that is not EVPN,
// holds foreign VNets, or is empty but does not match the controller and
// VRF.
func checkAdoption(v *sdnView, own sdnIDs, cluster *config.Cluster) error {
	s := cluster.Proxmox.Network.Cluster.SDN
	vrf, tag := strconv.Itoa(s.VRFTag), strconv.Itoa(s.Tag)
	problems := vxlanCollisions(v, own, vrf, tag)
	problems = append(problems, ownVNetProblems(v, own, cluster.Name)...)
	problems = append(problems, ownZoneProblems(v, own, vrf)...)
	if len(problems) > 0 {
		return fmt.Errorf("proxmox: managed SDN: %s", strings.Join(problems, "; "))
	}
	return nil
}

// vxlanCollisions names the other EVPN zones and VXLAN/EVPN VNets that
// already use the cluster's VRF VXLAN id or VNet tag.
func vxlanCollisions(v *sdnView, own sdnIDs, vrf, tag string) []string {
	var problems []string
	for _, id := range sortedKeys(v.zones) {
		z := v.zones[id]
		if id == own.zone || !z.exists() || z.eff["type"] != config.SDNZoneEVPN {
			continue
		}
		if x := z.eff["vrf-vxlan"]; x == vrf || x == tag {
			problems = append(problems, fmt.Sprintf("VXLAN id %s is already the vrf-vxlan of zone %s; set explicit %s.vrf_tag/tag", x, id, sdnKey))
		}
	}
	for _, id := range sortedKeys(v.vnets) {
		vn := v.vnets[id]
		if id == own.vnet || !vn.exists() {
			continue
		}
		zt := ""
		if z := v.zones[vn.eff["zone"]]; z.exists() {
			zt = z.eff["type"]
		}
		if x := vn.eff["tag"]; (zt == "evpn" || zt == "vxlan") && (x == vrf || x == tag) {
			problems = append(problems, fmt.Sprintf("VXLAN id %s is already the tag of VNet %s; set explicit %s.vrf_tag/tag", x, id, sdnKey))
		}
	}
	return problems
}

// ownVNetProblems refuses an existing VNet of the cluster's name that
// lacks the cluster's alias or sits in another zone.
func ownVNetProblems(v *sdnView, own sdnIDs, cluster string) []string {
	vn := v.vnets[own.vnet]
	switch {
	case !vn.exists():
		return nil
	case vn.eff["alias"] != SDNAlias(cluster):
		return []string{fmt.Sprintf("VNet %s exists without talosc's alias %q, so it is not this cluster's; pick another %s.name or remove it", own.vnet, SDNAlias(cluster), sdnKey)}
	case vn.eff["zone"] != own.zone:
		return []string{fmt.Sprintf("VNet %s is in zone %s, not %s; remove it or pick another %s.name", own.vnet, vn.eff["zone"], own.zone, sdnKey)}
	}
	return nil
}

// ownZoneProblems refuses an existing zone of the cluster's name that is
// not EVPN, holds VNets talosc does not manage, or (without the cluster's
// VNet) has another controller or VRF.
func ownZoneProblems(v *sdnView, own sdnIDs, vrf string) []string {
	z := v.zones[own.zone]
	if !z.exists() {
		return nil
	}
	var others []string
	for _, id := range sortedKeys(v.vnets) {
		if vn := v.vnets[id]; id != own.vnet && vn.exists() && vn.eff["zone"] == own.zone {
			others = append(others, id)
		}
	}
	ourVNet := v.vnets[own.vnet].exists()
	switch {
	case z.eff["type"] != config.SDNZoneEVPN:
		return []string{fmt.Sprintf("zone %s exists and is a %s zone, not EVPN; pick another %s.name", own.zone, z.eff["type"], sdnKey)}
	case len(others) > 0:
		return []string{fmt.Sprintf("zone %s holds VNets talosc does not manage (%s); pick another %s.name", own.zone, strings.Join(others, ", "), sdnKey)}
	case !ourVNet && (z.eff["controller"] != own.controller || z.eff["vrf-vxlan"] != vrf):
		return []string{fmt.Sprintf("zone %s exists (controller %s, vrf-vxlan %s) and does not match this cluster's (controller %s, vrf-vxlan %s); pick another %s.name or remove the zone",
			own.zone, z.eff["controller"], z.eff["vrf-vxlan"], own.controller, vrf, sdnKey)}
	}
	return nil
}

// nodeSet compares comma-separated node lists as sets.
func nodeSet(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
