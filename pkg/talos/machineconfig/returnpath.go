package machineconfig

import (
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/constants"

	"github.com/talosc/talosc/pkg/config"
)

// ReturnPathPod is the name of the Proxmox return-path static pod.
const ReturnPathPod = "taloscluster-proxmox-return-path"

// returnPathTable is the nftables table the return-path pod owns.
const returnPathTable = "taloscluster_return_path"

// returnPathPatch adds the static pod that sends replies to connections
// which arrived on the external NIC back out of it (Proxmox with an
// ingress_pool): it marks such connections in conntrack and copies the mark
// onto reply packets, which routing rule 1001 sends to table 100. The pod
// uses the kube-proxy image (it ships nft) at the version kube-proxy runs
// at on the node (Images.Proxy's tag mid-upgrade, else the node's
// Kubernetes version, the RUNNING one for existing nodes), so no node
// pulls the target version before its upgrade step (I-R12).
func returnPathPatch(cfg *config.Cluster, n Node) (NamedPatch, error) {
	contract, err := ContractFor(n.TalosVersion)
	if err != nil {
		return NamedPatch{}, err
	}
	version := n.KubernetesVersion
	if n.Images.Proxy != "" {
		version = imageTag(n.Images.Proxy)
	}
	kube, err := config.ParseVersion(version)
	if err != nil {
		return NamedPatch{}, fmt.Errorf("proxmox return path: kube-proxy version: %w", err)
	}
	mac, err := n.mac(cfg.Name, 1)
	if err != nil {
		return NamedPatch{}, err
	}
	pod := returnPathPodSpec(constants.KubeProxyImage+":"+kube.String(), returnPathScript(mac, cfg.Network.External.CIDR.Masked().String()))
	if !contract.MultidocKubernetesConfigSupported() {
		return patch(PatchProxmoxReturnPath, m{"machine": m{"pods": []any{pod}}})
	}
	return patch(PatchProxmoxReturnPath, staticPodDoc{header: kind("KubeStaticPodConfig"), Name: ReturnPathPod, Pod: pod})
}

// returnPathScript finds the external NIC by MAC, (re)creates the nftables
// table and stays up while the table exists, so the kubelet recreates it if
// someone removes it. The ruleset goes through a pipe, not a here-document:
// the root filesystem is read-only and some shells write here-documents to
// a temporary file.
func returnPathScript(mac, extCIDR string) string {
	return fmt.Sprintf(`set -eu
mac=%[1]q
link=""
for dev in /sys/class/net/*; do
  read -r addr < "$dev/address" || continue
  if [ "$addr" = "$mac" ]; then link="${dev##*/}"; fi
done
if [ -z "$link" ]; then echo "no link with MAC $mac" >&2; exit 1; fi
rules="table ip %[3]s {
  chain prerouting {
    type filter hook prerouting priority -160; policy accept;
    iifname \"$link\" ip daddr %[2]s ct state new ct mark set ct mark or %#[4]x
    ct direction reply ct mark and %#[4]x == %#[4]x meta mark set meta mark or %#[4]x
  }
}"
nft delete table ip %[3]s 2>/dev/null || true
printf '%%s\n' "$rules" | nft -f -
while nft list table ip %[3]s >/dev/null 2>&1; do sleep 30; done
`, mac, extCIDR, returnPathTable, ingressMark)
}

// returnPathPodSpec is the static pod: host network, node-critical,
// NET_ADMIN only, read-only root filesystem.
func returnPathPodSpec(image, script string) m {
	return m{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": m{
			"name":      ReturnPathPod,
			"namespace": "kube-system",
			"labels":    m{"app.kubernetes.io/name": ReturnPathPod, "app.kubernetes.io/managed-by": "talosc"},
		},
		"spec": m{
			"hostNetwork":       true,
			"priorityClassName": "system-node-critical",
			"restartPolicy":     "Always",
			"containers": []any{m{
				"name":    "return-path",
				"image":   image,
				"command": []string{"/bin/sh", "-c", script},
				"securityContext": m{
					"allowPrivilegeEscalation": false,
					"readOnlyRootFilesystem":   true,
					"capabilities":             m{"drop": []string{"ALL"}, "add": []string{"NET_ADMIN"}},
				},
			}},
		},
	}
}
