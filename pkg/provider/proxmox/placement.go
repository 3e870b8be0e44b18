package proxmox

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
)

const gib = 1 << 30

// nodeRoom is a compute node as placement sees it.
type nodeRoom struct {
	name string
	// free is memory not used (bytes), less what this run reserved.
	free int64
	// controlPlane reports that a control plane runs or is placed there.
	controlPlane bool
}

// placement is the spread strategy (reference §5.3) over nodes, given the
// nodes already running a control plane of this cluster.
type placement struct {
	nodes []*nodeRoom
}

// newPlacement starts a placement over the compute nodes Preflight found.
func newPlacement(nodes []Node, controlPlaneNodes []string) *placement {
	p := &placement{}
	for _, n := range nodes {
		if n.Online {
			p.nodes = append(p.nodes, &nodeRoom{name: n.Name, free: int64(n.FreeMemory), controlPlane: slices.Contains(controlPlaneNodes, n.Name)}) //nolint:gosec // memory sizes are far below 2^63
		}
	}
	slices.SortFunc(p.nodes, func(a, b *nodeRoom) int { return strings.Compare(a.name, b.name) })
	return p
}

// place picks the node of machine m and reserves its memory: the pool's
// pinned node, else for a control plane a node without one (lowest name
// first), else the node with the most free memory (ties by name). Call it
// in hostname order for a deterministic result.
func (p *placement) place(m config.Machine, pool config.Pool, key string) (string, error) {
	need := int64(pool.Memory) * gib
	var fits []*nodeRoom
	for _, n := range p.nodes {
		if pool.Node == "" || n.name == pool.Node {
			if n.free >= need {
				fits = append(fits, n)
			}
		}
	}
	if pool.Node != "" && !slices.ContainsFunc(p.nodes, func(n *nodeRoom) bool { return n.name == pool.Node }) {
		return "", fmt.Errorf("%s.node: %s is not an online compute node (nodes: %s); bring it online, add it to proxmox.nodes or change %s.node", key, pool.Node, p.names(), key)
	}
	if len(fits) == 0 {
		return "", fmt.Errorf("no Proxmox node has %d GB available for %s: free memory on a node, lower %s.memory or add nodes", pool.Memory, m.Hostname, key)
	}
	best := slices.MinFunc(fits, func(a, b *nodeRoom) int {
		if m.Role == config.RoleControlPlane {
			if a.controlPlane != b.controlPlane {
				return boolRank(a.controlPlane) - boolRank(b.controlPlane)
			}
			return strings.Compare(a.name, b.name)
		}
		return cmp.Or(cmp.Compare(b.free, a.free), strings.Compare(a.name, b.name))
	})
	best.free -= need
	best.controlPlane = best.controlPlane || m.Role == config.RoleControlPlane
	return best.name, nil
}

func (p *placement) names() string {
	names := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		names[i] = n.name
	}
	return strings.Join(names, ", ")
}
