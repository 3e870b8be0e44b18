package machineconfig

import (
	"fmt"
	"net/netip"
	"strings"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/firewall"
	"github.com/talosc/talosc/pkg/talos/manifests"
)

// Names of the generated patches, in stack order (reference §5.4). The
// cloud-controller-manager patch is talosc's addition (seed 004), placed
// right after the control-plane cluster patch.
const (
	PatchMachine        = "machine"
	PatchHostname       = "hostname"
	PatchDiskEncryption = "disk-encryption"
	PatchCluster        = "cluster"
	PatchCCM            = "cloud-controller-manager"
	PatchFirewall       = "firewall"
	PatchKubeSpan       = "kubespan"
	PatchTailscale      = "tailscale"
)

// tailnetCIDR is the Tailscale CGNAT range KubeSpan must not use as peer
// endpoints.
const tailnetCIDR = "100.64.0.0/10"

// kubeSpanOverhead is what the WireGuard encapsulation costs on the L2 MTU.
const kubeSpanOverhead = 80

// stack returns every patch of node n in application order: machine →
// hostname → (disk encryption) → (cluster, control planes) → (cloud
// controller manager) → firewall → (kubespan) → (tailscale) → provider
// patches → talos.config_patches → the pool's config_patches.
func stack(in *Input, n Node, pool config.Pool, contract *talosconfig.VersionContract, contrib Contribution) ([]NamedPatch, error) {
	cfg := in.Cluster
	legacy := !contract.MultidocKubernetesConfigSupported()
	labels := NodeLabels(cfg, n.Machine, contrib.Labels)
	type step struct {
		on    bool
		build func() (NamedPatch, error)
	}
	steps := []step{
		{true, func() (NamedPatch, error) { return machinePatch(cfg, legacy, contrib.InstallDisk, labels) }},
		{true, func() (NamedPatch, error) { return hostnamePatch(n.Machine.Hostname) }},
		{in.DiskEncryptionPassphrase != "", func() (NamedPatch, error) { return encryptionPatch(in.DiskEncryptionPassphrase) }},
		{n.controlPlane(), func() (NamedPatch, error) { return clusterPatch(cfg, legacy) }},
		{cfg.Talos.CloudControllerManager, func() (NamedPatch, error) { return ccmPatch(legacy, n.controlPlane()) }},
		{true, func() (NamedPatch, error) { return firewallPatch(cfg, n.controlPlane()) }},
		{cfg.Talos.KubeSpan, func() (NamedPatch, error) { return kubeSpanPatch(cfg) }},
		{cfg.Tailscale.Active(), func() (NamedPatch, error) { return tailscalePatch(cfg, n.Machine.Hostname) }},
	}
	var out []NamedPatch
	for _, s := range steps {
		if !s.on {
			continue
		}
		p, err := s.build()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	out = append(out, contrib.Patches...)
	out = append(out, userPatches("talos.config_patches", cfg.Talos.ConfigPatches)...)
	poolKey := "workers." + pool.Name
	if n.controlPlane() {
		poolKey = config.RoleControlPlane
	}
	out = append(out, userPatches(poolKey+".config_patches", pool.ConfigPatches)...)
	return out, nil
}

// userPatches names each cluster.yaml patch after its key.
func userPatches(key string, texts config.Patches) []NamedPatch {
	out := make([]NamedPatch, 0, len(texts))
	for i, t := range texts {
		out = append(out, NamedPatch{Name: fmt.Sprintf("%s[%d]", key, i), YAML: t})
	}
	return out
}

// machinePatch carries the node labels, kubelet settings, install wipe and
// time servers: in the v1alpha1 document up to Talos 1.13, in the typed
// KubeNodeConfig, KubeletConfig and UnattendedInstallConfig from 1.14.
func machinePatch(cfg *config.Cluster, legacy bool, disk string, labels map[string]string) (NamedPatch, error) {
	subnets := []string{cfg.Network.Cluster.CIDR.String()}
	kubeletArgs := map[string]string{"rotate-server-certificates": "true"}
	var timeServers m
	if len(cfg.Network.NTP) > 0 {
		timeServers = m{"servers": cfg.Network.NTP}
	}
	if legacy {
		machine := m{
			"nodeLabels": labels,
			"kubelet":    m{"extraArgs": kubeletArgs, "nodeIP": m{"validSubnets": subnets}},
			"install":    m{"wipe": true},
		}
		if timeServers != nil {
			machine["time"] = timeServers
		}
		return patch(PatchMachine, m{"machine": machine})
	}
	var docs []any
	if timeServers != nil {
		docs = append(docs, m{"machine": m{"time": timeServers}})
	}
	docs = append(docs,
		kubeNodeDoc{header: kind("KubeNodeConfig"), NodeIP: nodeIP{ValidSubnets: subnets}, Labels: labels},
		kubeletDoc{header: kind("KubeletConfig"), ExtraArgs: kubeletArgs},
		unattendedInstallDoc{header: kind("UnattendedInstallConfig"), Provisioning: provisioning{
			DiskSelector: linkSelector{Match: fmt.Sprintf("disk.dev_path == %q", disk)},
			Wipe:         true,
		}},
	)
	return patch(PatchMachine, docs...)
}

// hostnamePatch sets the hostname and drops the generated "auto: stable".
func hostnamePatch(hostname string) (NamedPatch, error) {
	return patch(PatchHostname, m{
		"apiVersion": "v1alpha1",
		"kind":       "HostnameConfig",
		"hostname":   hostname,
		"auto":       m{"$patch": "delete"},
	})
}

// encryptionPatch encrypts STATE and EPHEMERAL with LUKS2 and the static
// passphrase from talossecrets.yaml. The keys live on the disk (STATE's in
// unencrypted META, EPHEMERAL's in the config on STATE): this is not
// at-rest protection against someone holding the disk.
func encryptionPatch(passphrase config.Secret) (NamedPatch, error) {
	key := m{"provider": "luks2", "keys": []any{m{"slot": 0, "static": m{"passphrase": passphrase.Reveal()}}}}
	return patch(PatchDiskEncryption, m{"machine": m{"systemDiskEncryption": m{"state": key, "ephemeral": key}}})
}

// clusterPatch (control planes) installs the pinned inline manifests (on
// OpenStack also the metadata-service NetworkPolicy),
// advertises etcd on the cluster L2 and, up to 1.13, keeps workloads off
// control planes (1.14 taints them by default).
func clusterPatch(cfg *config.Cluster, legacy bool) (NamedPatch, error) {
	etcd := m{"advertisedSubnets": []string{cfg.Network.Cluster.CIDR.String()}}
	inline := manifests.Inline()
	if cfg.Provider() == config.ProviderOpenStack {
		inline = append(inline, manifests.MetadataPolicy()) // user_data is served at 169.254.169.254
	}
	if legacy {
		return patch(PatchCluster, m{"cluster": m{
			"allowSchedulingOnControlPlanes": false,
			"etcd":                           etcd,
			"inlineManifests":                inlineManifests(inline),
		}})
	}
	docs := []any{m{"cluster": m{"etcd": etcd}}}
	for _, im := range inline {
		docs = append(docs, inlineManifestDoc{header: kind("KubeInlineManifestConfig"), Name: im.Name, Manifest: im.Contents})
	}
	return patch(PatchCluster, docs...)
}

func inlineManifests(in []manifests.Manifest) []any {
	out := make([]any, 0, len(in))
	for _, im := range in {
		out = append(out, m{"name": im.Name, "contents": im.Contents})
	}
	return out
}

// firewallPatch is the Talos host firewall of pkg/talos/firewall.
func firewallPatch(cfg *config.Cluster, controlPlane bool) (NamedPatch, error) {
	docs, err := firewall.Documents(firewall.Input{
		Security:     cfg.Security,
		ClusterCIDRs: []netip.Prefix{cfg.Network.Cluster.CIDR},
		Tailscale:    cfg.Tailscale != nil,
		Kubespan:     cfg.Talos.KubeSpan,
		ControlPlane: controlPlane,
	})
	if err != nil {
		return NamedPatch{}, fmt.Errorf("firewall: %w", err)
	}
	return NamedPatch{Name: PatchFirewall, YAML: joinDocs(docs)}, nil
}

// kubeSpanPatch turns KubeSpan on (talos.kubespan). Peer endpoints exclude
// the tailnet and the external network and anchors, which are not paths
// between nodes.
func kubeSpanPatch(cfg *config.Cluster) (NamedPatch, error) {
	mtu := cfg.Network.Cluster.MTU
	if mtu == 0 {
		mtu = config.DefaultMTU
	}
	endpoints := []string{"0.0.0.0/0"}
	if cfg.Tailscale != nil {
		endpoints = append(endpoints, "!"+tailnetCIDR)
	}
	if ext := cfg.Network.External; ext != nil {
		endpoints = append(endpoints, "!"+ext.CIDR.String(), "!"+ext.AnchorCIDR.Masked().String())
	}
	return patch(PatchKubeSpan, kubeSpanDoc{
		header:  kind("KubeSpanConfig"),
		Enabled: true,
		MTU:     mtu - kubeSpanOverhead,
		Filters: kubeSpanFilters{Endpoints: endpoints},
	})
}

// tailscalePatch configures the tailscale extension (active tailscale:
// section and auth key).
func tailscalePatch(cfg *config.Cluster, hostname string) (NamedPatch, error) {
	doc, err := firewall.TailscaleDocument(hostname, cfg.Tailscale.AuthKey.Reveal(), cfg.Tailscale.LoginServer)
	if err != nil {
		return NamedPatch{}, err
	}
	return NamedPatch{Name: PatchTailscale, YAML: doc}, nil
}

// joinDocs joins single YAML documents into one multi-document text.
func joinDocs(docs []string) string {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(d)
		if !strings.HasSuffix(d, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
