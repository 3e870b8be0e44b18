package machineconfig

import _ "embed" // for the go:embed directive below

// CCM pinning (talos.cloud_controller_manager, seed 004). The seed installs
// the Talos CCM with cluster.externalCloudProvider.manifests pointing at
// the upstream main branch, which a node would fetch at boot, unpinned.
// talosc instead carries its own manifest (talos-ccm.yaml, written for
// talosc) as an inline manifest with the image pinned, so nothing is
// fetched from the internet at boot except the pinned container image.
//
// The manifest has no comments, as every byte counts against Nova's
// user_data limit. What it holds: the CCM's ServiceAccount; a
// talos.dev/v1alpha1 ServiceAccount (os:reader), which Talos turns into a
// secret with a Talos API client certificate when kubernetesTalosAPIAccess
// allows kube-system; an empty ccm-config.yaml; RBAC for leader election,
// events, node initialisation and per-controller service accounts; and a
// single-replica Deployment on the control planes (tolerating the
// control-plane and uninitialized taints, secret and config mounted 0440).
// Only the cloud-node controller runs: kubelet serving certificates are
// already approved by the kubelet-serving-cert-approver every control plane
// carries, so node-csr-approval would approve them twice.
const (
	// CCMManifestName is the inline manifest name of the Talos CCM.
	CCMManifestName = "talos-cloud-controller-manager"
	// CCMImage is the pinned Talos CCM image in talos-ccm.yaml.
	CCMImage = "ghcr.io/siderolabs/talos-cloud-controller-manager:v1.10.0"
)

// ccmManifestYAML is immutable embedded data (go:embed needs a package
// variable); it holds no state.
//
//go:embed talos-ccm.yaml
var ccmManifestYAML string

// CCMManifest returns the Talos CCM manifest control planes carry when
// talos.cloud_controller_manager is on.
func CCMManifest() string { return ccmManifestYAML }

// ccmPatch switches every node to an external cloud provider (kubelets
// register with --cloud-provider=external and the uninitialized taint,
// which the CCM removes) and, on control planes, lets kube-system read the
// Talos API and installs the CCM manifest.
func ccmPatch(legacy, controlPlane bool) (NamedPatch, error) {
	kubeletArgs := map[string]string{"cloud-provider": "external"}
	roles, namespaces := []string{"os:reader"}, []string{"kube-system"}
	cluster := m{"externalCloudProvider": m{"enabled": true}}
	if legacy {
		machine := m{"kubelet": m{"extraArgs": kubeletArgs}}
		if controlPlane {
			machine["features"] = m{"kubernetesTalosAPIAccess": m{
				"enabled":                     true,
				"allowedRoles":                roles,
				"allowedKubernetesNamespaces": namespaces,
			}}
			cluster["inlineManifests"] = []any{m{"name": CCMManifestName, "contents": ccmManifestYAML}}
		}
		return patch(PatchCCM, m{"machine": machine, "cluster": cluster})
	}
	docs := []any{
		m{"cluster": cluster},
		kubeletDoc{header: kind("KubeletConfig"), ExtraArgs: kubeletArgs},
	}
	if controlPlane {
		docs = append(docs,
			talosAPIAccessDoc{header: kind("KubeTalosAPIAccessConfig"), AllowedRoles: roles, AllowedKubernetesNamespaces: namespaces},
			inlineManifestDoc{header: kind("KubeInlineManifestConfig"), Name: CCMManifestName, Manifest: ccmManifestYAML},
		)
	}
	return patch(PatchCCM, docs...)
}
