package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
)

// ControlPlaneLabel marks a Kubernetes control-plane node.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// Removal is one machine or node cluster.yaml no longer wants.
type Removal struct {
	Name         string
	ControlPlane bool
}

// Removals are the owned inventory's machines and the live Kubernetes
// nodes cluster.yaml no longer describes, sorted by name. A node is a
// control plane by its name (…-controlplane-NN), its inventory role, or
// its Kubernetes role label (I-S1).
func Removals(cfg *config.Cluster, inv *provider.Inventory, nodes []kube.Node) []Removal {
	desired := cfg.Hostnames()
	wanted := func(name string) bool {
		return slices.ContainsFunc(desired, func(d config.Machine) bool { return d.Hostname == name })
	}
	byName := map[string]bool{}
	for _, m := range inv.Machines {
		if !wanted(m.Hostname) {
			byName[m.Hostname] = byName[m.Hostname] || m.Role == config.RoleControlPlane
		}
	}
	for _, n := range nodes {
		if !wanted(n.Name) {
			_, cp := n.Labels[ControlPlaneLabel]
			byName[n.Name] = byName[n.Name] || cp
		}
	}
	out := make([]Removal, 0, len(byName))
	for name, cp := range byName {
		out = append(out, Removal{Name: name, ControlPlane: cp || strings.Contains(name, "-controlplane-")})
	}
	slices.SortFunc(out, func(a, b Removal) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// QuorumRefusal refuses removing a control plane when the desired count
// would leave etcd without a safe quorum (I-S1): even, or none.
func QuorumRefusal(desiredControlPlanes int, removals []Removal) error {
	if desiredControlPlanes >= 1 && desiredControlPlanes%2 == 1 {
		return nil
	}
	for _, r := range removals {
		if r.ControlPlane {
			return fmt.Errorf("refusing to remove controlplane %s: desired controlplane count %d would break etcd quorum (controlplane.count must be odd and at least 1)", r.Name, desiredControlPlanes)
		}
	}
	return nil
}

// checkRemovals validates every removal before anything happens and
// returns their names. Removing needs a live cluster: machines cluster.yaml
// no longer describes while the API does not answer are refused.
func checkRemovals(in *phase.Input, inv *provider.Inventory, l *view) ([]string, error) {
	removals := Removals(in.Config, inv, l.nodes)
	if len(removals) == 0 {
		return nil, nil
	}
	if err := QuorumRefusal(in.Config.ControlPlane.Count, removals); err != nil {
		return nil, err
	}
	names := make([]string, len(removals))
	for i, r := range removals {
		names[i] = r.Name
	}
	if !l.up {
		return nil, fmt.Errorf("%d machine(s) exist that cluster.yaml no longer describes (%s), but the cluster's Kubernetes API does not answer: removing nodes needs a live cluster (restore the pool counts, or bring the API back)",
			len(names), joinNames(names))
	}
	return names, nil
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
