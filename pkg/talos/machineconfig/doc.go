// Package machineconfig generates every node's Talos machine configuration
// from cluster.yaml, the cluster identity and the endpoints the network
// phase reports (reference §5.4), through the Talos machinery library.
//
// Generation is pure: Generate takes an Input (the cluster) and a Node and
// returns a validated Config. The node's Talos version picks the config
// contract (ContractFor): v1alpha1-centred documents up to Talos 1.13, the
// typed Kubernetes and install documents from 1.14. Its Kubernetes version
// is the running one for existing nodes and the target for new ones
// (KubernetesVersion refuses to guess, invariant I-13).
//
// Machinery generates the base config; talosc then applies a stack of
// strategic-merge patches in a fixed order (JSON6902 patches cannot patch
// multi-document configs): machine, hostname, disk encryption, cluster
// (control planes), cloud controller manager, firewall, KubeSpan,
// Tailscale, the provider's patches (OpenStackContribution,
// ProxmoxContribution), then cluster.yaml's config_patches, cluster-wide
// before the pool's, so a user patch overrides anything generated.
package machineconfig
