package inspect

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/talos/manifests"
)

// The metadata-service decision (reference §5.2). OpenStack
// serves each server's user_data (its whole machine config: the cluster CA
// keys on control planes, the join tokens on every node) at
// 169.254.169.254 to whatever asks from the server, pods included. Control
// planes carry a NetworkPolicy denying pods in namespace default that
// address (manifests.MetadataPolicy), but only a CNI that enforces
// NetworkPolicy makes it bite, and Talos's default, flannel, does not.
// Talos has no machine-config switch that filters pod traffic to the
// address (its firewall covers only traffic to the node itself), so the
// fix is the CNI; check says so on OpenStack.

// metadataFinding is check's line about the metadata service on OpenStack
// (ok false on other providers, which deliver configs another way).
func metadataFinding(cfg *config.Cluster) (phase.Finding, bool) {
	if cfg.Provider() != config.ProviderOpenStack {
		return phase.Finding{}, false
	}
	f := phase.Finding{
		Name:       "metadata service",
		Configured: "NetworkPolicy deny-metadata-service in namespace default (" + manifests.MetadataAddress + ")",
	}
	switch cni, from := cniName(cfg); cni {
	case "flannel":
		f.Observed = "CNI flannel (" + from + "), which does not enforce NetworkPolicy"
		f.Attention = "any pod can read the machine configs (cluster CA keys on control planes) at " + manifests.MetadataAddress
		f.Fix = "use a CNI that enforces NetworkPolicy: set cluster.network.cni.name: none in talos.config_patches and install Cilium or Calico"
	default:
		f.Observed = fmt.Sprintf("CNI %s (%s): the policy holds only if it enforces NetworkPolicy, which talosc cannot see; pods on the host network are never covered", cni, from)
	}
	return f, true
}

// cniName is the cluster's CNI as the machine-config patches leave it
// (cluster.network.cni.name; Talos defaults to flannel) and where that
// came from. The cluster-wide patches apply first, the control-plane
// pool's last, so the last setting wins; a JSON patch touching the CNI
// makes it "unknown".
func cniName(cfg *config.Cluster) (name, from string) {
	name, from = "flannel", "the Talos default"
	for _, src := range []struct {
		key     string
		patches config.Patches
	}{{"talos.config_patches", cfg.Talos.ConfigPatches}, {"controlplane.config_patches", cfg.ControlPlane.ConfigPatches}} {
		for _, p := range src.patches {
			if n, ok := patchCNI(p); ok {
				name, from = n, "set in "+src.key
			}
		}
	}
	return name, from
}

// patchCNI reads cluster.network.cni.name from one patch (YAML documents).
func patchCNI(patch string) (string, bool) {
	dec := yaml.NewDecoder(strings.NewReader(patch))
	name, found := "", false
	for {
		var doc any
		if dec.Decode(&doc) != nil {
			return name, found
		}
		switch d := doc.(type) {
		case map[string]any:
			if n, ok := dig(d, "cluster", "network", "cni", "name").(string); ok {
				name, found = n, true
			}
		case []any: // a JSON patch
			if strings.Contains(fmt.Sprint(d), "/cluster/network/cni") {
				name, found = "unknown (a JSON patch)", true
			}
		}
	}
}

// dig follows keys through nested mappings.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
