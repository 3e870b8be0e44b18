package nodes

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
)

// nodeRoles maps every hostname the run knows (desired or owned) to its
// role.
type nodeRoles map[string]string

// roles are the desired machines' and the owned machines' roles.
func (o *observed) roles(desired []config.Machine) nodeRoles {
	out := nodeRoles{}
	if o.inv != nil {
		for _, m := range o.inv.Machines {
			out[m.Hostname] = m.Role
		}
	}
	for _, m := range desired {
		out[m.Hostname] = m.Role
	}
	return out
}

// classified gives every change its node and its disruption class.
func (r *run) classified(changes []state.Change) []state.Change {
	roles := r.obs.roles(r.desired)
	for i := range changes {
		changes[i] = classify(changes[i], r.cloud.MachineKind(), roles, r.upAtDiscover)
	}
	return changes
}

// classify decides the disruption of a change whose producer did not (a
// provider's, a scale-down's) and the node it touches, from what the run
// knows: the change, the provider's machine kind, the nodes' roles, and
// whether the cluster is up. A
// class its producer set is kept: only the producer knows, for instance,
// whether an apply reboots the node on its running Talos version.
func classify(c state.Change, machineKind string, roles nodeRoles, up bool) state.Change {
	if c.Node == "" {
		if _, ok := roles[c.Name]; ok {
			c.Node = c.Name
		}
	}
	if c.Disruption == "" {
		c.Disruption = disruptionOf(c, machineKind, roles[c.Node] == config.RoleControlPlane, up)
	}
	return c
}

// disruptionOf is the disruption of c, a change to a control plane or not,
// on a cluster up or not.
func disruptionOf(c state.Change, machineKind string, controlPlane, up bool) state.Disruption {
	switch {
	case c.Action == state.ActionReplace:
		return state.DisruptionReplace
	case c.Kind == KindEtcdMember:
		return state.DisruptionEtcdMembership
	case c.Kind == KindTalosNode && c.Action == state.ActionDelete && controlPlane:
		// A graceful reset: a control plane leaves etcd first.
		return state.DisruptionEtcdMembership
	case c.Kind == KindTalosNode && c.Action == state.ActionDelete,
		c.Kind == machineKind && c.Action == state.ActionDelete:
		return state.DisruptionRemove
	case c.Kind == machineKind && c.Action == state.ActionCreate && up && controlPlane:
		// A new control plane of a running cluster joins etcd.
		return state.DisruptionEtcdMembership
	default:
		return state.DisruptionNone
	}
}

// digest identifies what a plan depended on: the owned machines, the
// Kubernetes nodes as listed (versions, readiness, cordons) and what each
// node runs. A saved plan is applied only while a fresh plan observes the
// same.
func (o *observed) digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "inventory %s\n", sections.InventoryDigest(o.inv))
	nodes := slices.Clone(o.nodes)
	slices.SortFunc(nodes, func(a, b kube.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		fmt.Fprintf(h, "node %q %q %q %t %t\n", n.Name, n.OSImage, n.KubeletVersion, n.Ready, n.Unschedulable)
	}
	if o.nodesErr != nil {
		fmt.Fprintf(h, "nodes unknown\n")
	}
	for _, host := range slices.Sorted(maps.Keys(o.running)) {
		fmt.Fprintf(h, "running %q %q %q\n", host, o.running[host].talos, o.running[host].schematic)
	}
	return hex.EncodeToString(h.Sum(nil))
}
