package proxmox

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// sdnBridgeWait bounds the wait for the VNet bridge after an apply
// (reference §5.3: 60 s).
const sdnBridgeWait = 60 * time.Second

// clusterNode is a node as cluster/status lists it.
type clusterNode struct {
	Type   string `json:"type"`
	Name   string `json:"name"`
	IP     string `json:"ip"`
	Online int    `json:"online"`
}

func (c *Cloud) clusterNodes(ctx context.Context) ([]clusterNode, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var all []clusterNode
	if err := c.client.Get(ctx, "/cluster/status", &all); err != nil {
		return nil, fmt.Errorf("proxmox: read the cluster status (cluster/status): %w", err)
	}
	return slices.DeleteFunc(all, func(n clusterNode) bool { return n.Type != "node" }), nil
}

// reconcileSDN makes the cluster's managed EVPN zone, VNet and subnet
// (and the controller when missing) match cluster.yaml, through plan, and
// applies the SDN config only when something was staged or left staged by
// an earlier run. It refuses, before any mutation, other administrators'
// pending changes, VNI collisions and objects it may not adopt.
func (c *Cloud) reconcileSDN(ctx context.Context, cluster *config.Cluster, env *Environment, plan *provider.Plan) error {
	own := ownSDN(cluster)
	v, resumable, err := c.readSDNToReconcile(ctx, own, cluster)
	if err != nil {
		return err
	}
	nodes, err := c.clusterNodes(ctx)
	if err != nil {
		return err
	}
	zone, err := desiredZone(cluster, v, nodes, env, c.opts.Logf)
	if err != nil {
		return err
	}
	staged := false
	do := func(ch state.Change, fn func(context.Context) error) error {
		staged = true
		return plan.Do(ctx, ch, fn)
	}
	if err := c.stageSDN(v, own, cluster, nodes, zone, do); err != nil {
		return err
	}
	if !staged && !resumable {
		return c.verifyVNet(ctx, own.vnet, env)
	}
	if err := c.applySDN(ctx, plan); err != nil {
		return err
	}
	// Only a real run applied the change, so only it has a bridge to verify.
	return plan.Verify(ctx, func(ctx context.Context) error { return c.verifyVNet(ctx, own.vnet, env) })
}

// stageFunc records one SDN change through the plan and runs it unless
// the run is dry.
type stageFunc func(state.Change, func(context.Context) error) error

// readSDNToReconcile reads the SDN configuration and refuses, before any
// mutation, other administrators' pending changes, VNI collisions and
// objects talosc may not adopt. It reports whether the cluster's own
// objects are staged but not applied (an earlier run to resume).
func (c *Cloud) readSDNToReconcile(ctx context.Context, own sdnIDs, cluster *config.Cluster) (*sdnView, bool, error) {
	v, err := c.readSDN(ctx)
	if err != nil {
		return nil, false, err
	}
	resumable, err := pendingCheck(v, own, false)
	if err != nil {
		return nil, false, err
	}
	if err := checkAdoption(v, own, cluster); err != nil {
		return nil, false, err
	}
	return v, resumable, nil
}

// stageSDN stages the controller (when missing), the zone, the VNet and
// the subnet as cluster.yaml wants them.
func (c *Cloud) stageSDN(v *sdnView, own sdnIDs, cluster *config.Cluster, nodes []clusterNode, zone map[string]string, do stageFunc) error {
	s := cluster.Proxmox.Network.Cluster.SDN
	if err := c.ensureController(v.controllers[own.controller], own.controller, s.ASN, nodes, do); err != nil {
		return err
	}
	if err := c.ensureSDN(v.zones[own.zone], KindSDNZone, own.zone, "/cluster/sdn/zones", "zone", zone, do); err != nil {
		return err
	}
	vnet := map[string]string{"zone": own.zone, "tag": strconv.Itoa(s.Tag), "alias": SDNAlias(cluster.Name)}
	if err := c.ensureSDN(v.vnets[own.vnet], KindSDNVNet, own.vnet, "/cluster/sdn/vnets", "vnet", vnet, do); err != nil {
		return err
	}
	gw, _ := cluster.SDNGateway()
	subnets := "/cluster/sdn/vnets/" + url.PathEscape(own.vnet) + "/subnets"
	if sub := v.subnets[own.vnet][own.subnet]; sub.exists() {
		subnet := map[string]string{"gateway": gw.String(), "snat": "1"}
		return c.ensureSDN(sub, KindSDNSubnet, own.subnet, subnets, "subnet", subnet, do)
	}
	body := map[string]any{"subnet": own.cidr, "type": "subnet", "gateway": gw.String(), "snat": 1}
	return do(state.Change{Action: state.ActionCreate, Kind: KindSDNSubnet, Name: own.subnet, Detail: own.cidr + " gateway " + gw.String()},
		func(ctx context.Context) error { return c.createSDN(ctx, subnets, "subnet", own.subnet, body) })
}

// ensureController creates the EVPN controller when missing, peering
// every cluster node; an existing one is shared and used as it is.
func (c *Cloud) ensureController(ctl *sdnObj, id string, asn int64, nodes []clusterNode, do stageFunc) error {
	switch {
	case !ctl.exists():
		var peers []string
		for _, n := range nodes {
			if n.IP != "" {
				peers = append(peers, n.IP)
			}
		}
		body := map[string]any{"controller": id, "type": "evpn", "asn": asn, "peers": strings.Join(peers, ",")}
		return do(state.Change{Action: state.ActionCreate, Kind: KindSDNController, Name: id, Detail: fmt.Sprintf("asn %d, peers %s", asn, body["peers"])},
			func(ctx context.Context) error {
				return c.createSDN(ctx, "/cluster/sdn/controllers", "controller", id, body)
			})
	case ctl.eff["type"] != "evpn":
		return fmt.Errorf("proxmox.network.cluster.sdn.controller: controller %s is a %s controller, not EVPN; pick an EVPN controller", id, ctl.eff["type"])
	case ctl.eff["asn"] != strconv.FormatInt(asn, 10):
		c.opts.Logf("warning: SDN controller %s has ASN %s, not proxmox.network.cluster.sdn.asn %d; it is shared and used as it is", id, ctl.eff["asn"], asn)
	}
	return nil
}

// ensureSDN creates an object missing from the effective config, or
// updates the fields of want that drifted (node lists compared as sets);
// fields the cluster no longer sets are left as they are.
func (c *Cloud) ensureSDN(cur *sdnObj, kind, id, base, idKey string, want map[string]string, do stageFunc) error {
	if !cur.exists() {
		body := map[string]any{idKey: id}
		for k, v := range want {
			body[k] = v
		}
		if kind == KindSDNVNet {
			body["type"] = "vnet"
		}
		return do(state.Change{Action: state.ActionCreate, Kind: kind, Name: id, Detail: describe(want)},
			func(ctx context.Context) error { return c.createSDN(ctx, base, idKey, id, body) })
	}
	drift := map[string]string{}
	var detail []string
	for _, k := range sortedKeys(want) {
		have, w := cur.eff[k], want[k]
		same := have == w
		if k == "nodes" || k == "exitnodes" {
			same = slices.Equal(nodeSet(have), nodeSet(w))
		}
		if !same {
			drift[k] = w
			detail = append(detail, fmt.Sprintf("%s %q -> %q", k, have, w))
		}
	}
	if len(drift) == 0 {
		return nil
	}
	return do(state.Change{Action: state.ActionUpdate, Kind: kind, Name: id, Detail: strings.Join(detail, ", ")},
		func(ctx context.Context) error { return c.client.Put(ctx, base+"/"+url.PathEscape(id), drift, nil) })
}

// createSDN POSTs a new SDN object (one that does not exist). A second
// POST of the same id answers "already exists", so one whose answer was
// lost is looked for in the staged config before it is sent again.
func (c *Cloud) createSDN(ctx context.Context, base, idKey, id string, body map[string]any) error {
	return c.settle(ctx, "create SDN "+idKey+" "+id, func(ctx context.Context) error {
		return c.client.Post(ctx, base, body, nil)
	}, func(ctx context.Context) (bool, error) {
		objs, err := c.listSDN(ctx, base, idKey)
		return err == nil && objs[id].exists(), err
	})
}

func describe(m map[string]string) string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, k+" "+m[k])
	}
	return strings.Join(out, ", ")
}

// desiredZone is the EVPN zone's fields. It refuses compute nodes outside
// the zone's nodes (cluster.yaml's, or those an applied zone still
// carries) and warns about offline exit nodes.
func desiredZone(cluster *config.Cluster, v *sdnView, nodes []clusterNode, env *Environment, logf func(string, ...any)) (map[string]string, error) {
	s := cluster.Proxmox.Network.Cluster.SDN
	exit, primary := exitNodes(s, nodes)
	zone := map[string]string{
		"type": "evpn", "controller": s.Controller, "vrf-vxlan": strconv.Itoa(s.VRFTag),
		"exitnodes": strings.Join(nodeSet(strings.Join(exit, ",")), ","), "exitnodes-primary": primary,
		"advertise-subnets": "1", "disable-arp-nd-suppression": "1",
	}
	if s.MTU > 0 {
		zone["mtu"] = strconv.Itoa(s.MTU)
	}
	if len(s.Nodes) > 0 {
		zone["nodes"] = strings.Join(nodeSet(strings.Join(s.Nodes, ",")), ",")
	}
	if err := checkZoneNodes(s, v, env, logf); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Online == 0 && slices.Contains(exit, n.Name) {
			what := "exit node"
			if n.Name == primary {
				what = "primary exit node"
			}
			logf("warning: SDN %s %s is offline; the cluster network has no route out through it", what, n.Name)
		}
	}
	return zone, nil
}

// exitNodes are the zone's exit nodes (cluster.yaml's, or every cluster
// node, offline included) and its primary one (cluster.yaml's, or the
// first).
func exitNodes(s *config.SDN, nodes []clusterNode) (exit []string, primary string) {
	exit = s.ExitNodes
	if len(exit) == 0 {
		for _, n := range nodes {
			exit = append(exit, n.Name)
		}
		exit = nodeSet(strings.Join(exit, ","))
	}
	primary = s.PrimaryExitNode
	if primary == "" && len(exit) > 0 {
		primary = exit[0]
	}
	return exit, primary
}

// checkZoneNodes refuses compute nodes outside the zone's nodes:
// cluster.yaml's, or (with a warning) those an applied zone still
// carries.
func checkZoneNodes(s *config.SDN, v *sdnView, env *Environment, logf func(string, ...any)) error {
	restrict := s.Nodes
	if z := v.zones[s.Name]; len(s.Nodes) == 0 && z.exists() && z.eff["nodes"] != "" {
		restrict = nodeSet(z.eff["nodes"])
		logf("warning: SDN zone %s is still restricted to nodes %s, which cluster.yaml no longer sets; talosc does not unset it", s.Name, z.eff["nodes"])
	}
	if len(restrict) == 0 {
		return nil
	}
	var outside []string
	for _, n := range env.Nodes {
		if !slices.Contains(restrict, n.Name) {
			outside = append(outside, n.Name)
		}
	}
	if len(outside) > 0 {
		return fmt.Errorf("proxmox.network.cluster.sdn.nodes: compute node(s) %s are outside SDN zone %s (nodes %s); add them to the zone's nodes or restrict proxmox.nodes",
			strings.Join(outside, ", "), s.Name, strings.Join(restrict, ","))
	}
	return nil
}

// applySDN commits the staged SDN config (PUT cluster/sdn) and waits for
// the reload task.
func (c *Cloud) applySDN(ctx context.Context, plan *provider.Plan) error {
	return plan.Do(ctx, state.Change{Action: state.ActionUpdate, Kind: KindSDNApply, Name: "cluster/sdn", Detail: "apply the staged SDN configuration"},
		func(ctx context.Context) error {
			var upid goproxmox.UPID
			if err := c.client.Put(ctx, "/cluster/sdn", nil, &upid); err != nil {
				return err
			}
			return c.wait(ctx, "apply the SDN configuration", goproxmox.NewTask(upid, c.client))
		})
}

// verifyVNet waits until every compute node runs the VNet's bridge
// (the network reload may finish after the apply task), up to 60 s or
// Options.Wait when shorter.
func (c *Cloud) verifyVNet(ctx context.Context, vnet string, env *Environment) error {
	deadline := time.Now().Add(min(sdnBridgeWait, c.opts.Wait))
	pause := ctxwait.NewBackoff(c.opts.Poll)
	for {
		var missing []string
		for _, n := range env.Nodes {
			bridges, err := c.nodeBridges(ctx, n.Name)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(bridges, bridgeNamed(vnet)) {
				missing = append(missing, n.Name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proxmox: the SDN VNet bridge %s does not exist on node(s) %s after the SDN apply; check the nodes' network reload (Datacenter > SDN, node task log)",
				vnet, strings.Join(missing, ", "))
		}
		if err := pause.Sleep(ctx); err != nil {
			return err
		}
	}
}

// ValidateTeardown evaluates the managed-SDN teardown guards without
// changing anything, so destroy can refuse before it deletes any VM
// (reference §3.3): other administrators' pending SDN changes, or pending
// changes on the shared controller. It is nil without managed SDN.
func (c *Cloud) ValidateTeardown(ctx context.Context) error {
	cluster := c.cluster
	if cluster.Proxmox == nil || cluster.Proxmox.Network.Cluster.SDN == nil {
		return nil
	}
	v, err := c.readSDN(ctx)
	if err != nil {
		return err
	}
	_, err = pendingCheck(v, ownSDN(cluster), true)
	return err
}

// destroySDN deletes the cluster's subnet, its VNet (when it holds no
// other subnets) and its zone (when it holds no other VNets and is ours),
// then applies; never the controller.
func (c *Cloud) destroySDN(ctx context.Context, cluster *config.Cluster, plan *provider.Plan) error {
	own := ownSDN(cluster)
	v, err := c.readSDN(ctx)
	if err != nil {
		return err
	}
	resumable, err := pendingCheck(v, own, true)
	if err != nil {
		return err
	}
	staged := false
	del := func(kind, idKey, id, parent, detail string) error {
		staged = true
		return c.deleteSDN(ctx, plan, state.Change{Action: state.ActionDelete, Kind: kind, Name: id, Detail: detail}, idKey, parent)
	}
	vnetGone, err := c.destroyVNet(v, own, cluster.Name, del)
	if err != nil {
		return err
	}
	if vnetGone {
		if err := c.destroyZone(v, own, del); err != nil {
			return err
		}
	}
	if staged || resumable {
		return c.applySDN(ctx, plan)
	}
	return nil
}
