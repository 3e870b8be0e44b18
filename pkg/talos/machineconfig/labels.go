package machineconfig

import (
	"maps"
	"strings"

	"github.com/talosc/talosc/pkg/config"
)

// Default node labels every node gets (reference §2.3 tags).
const (
	// LabelRole is "controlplane" or "worker".
	LabelRole = "ncsa/role"
	// LabelPool is the node's pool name.
	LabelPool = "ncsa/pool"
	// LabelProject is the OpenStack project name (OpenStack, when known).
	LabelProject = "ncsa/project"
)

// NodeLabels returns the Kubernetes labels of machine m, lowest precedence
// first: the defaults (ncsa/role, ncsa/pool), the provider's defaults
// (ncsa/project), the cluster's tags, then the pool's tags. Spaces in every
// value become "_" (label values cannot hold spaces).
func NodeLabels(cfg *config.Cluster, m config.Machine, providerDefaults map[string]string) map[string]string {
	out := map[string]string{LabelRole: m.Role, LabelPool: m.Pool}
	maps.Copy(out, providerDefaults)
	maps.Copy(out, cfg.Tags)
	if m.Role == config.RoleControlPlane {
		maps.Copy(out, cfg.ControlPlane.Tags)
	} else if p, ok := cfg.Workers.Lookup(m.Pool); ok {
		maps.Copy(out, p.Tags)
	}
	for k, v := range out {
		out[k] = strings.ReplaceAll(v, " ", "_")
	}
	return out
}
