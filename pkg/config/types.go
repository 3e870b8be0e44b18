package config

// Cluster is the validated, defaulted configuration: cluster.yaml merged with
// its include files. The yaml tags are the cluster.yaml keys; they drive both
// the strict loader (a key without a field is refused) and the JSON Schema.
type Cluster struct {
	// Dir is the absolute cluster directory.
	Dir string `yaml:"-"`
	// Files lists the files that were merged, relative to Dir, cluster.yaml first.
	Files []string `yaml:"-"`

	// Include lists the files merged into cluster.yaml, as written.
	Include []string `yaml:"include,omitempty" jsonschema_description:"Files merged into cluster.yaml, relative to the cluster directory (only in cluster.yaml; the scaffold writes [secrets.yaml]). A key set in two files is refused."`
	// Name prefixes every hostname and provider resource.
	Name string `yaml:"name" jsonschema:"pattern=^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$,maxLength=63" jsonschema_description:"Cluster name: lowercase letters, digits and '-'; prefixes every hostname (<name>-<pool>-NN must stay within 63 characters)."`
	// Tags are node labels for every node (values stringified).
	Tags Labels `yaml:"tags,omitempty" jsonschema_description:"Node labels for every node; pool tags override them."`
	// Talos pins the Talos release and its machine-config additions.
	Talos Talos `yaml:"talos" jsonschema_description:"Talos release, extensions, patches, KubeSpan, the Talos cloud controller manager and the Image Factory."`
	// Kubernetes pins the Kubernetes release.
	Kubernetes Kubernetes `yaml:"kubernetes" jsonschema_description:"Kubernetes release and the kubelet repository check reads releases from."`
	// ControlPlane is the single control-plane pool (Name "controlplane").
	ControlPlane Pool `yaml:"controlplane" jsonschema_description:"The control-plane pool (keep the count odd)."`
	// Workers are the worker pools in file order.
	Workers Pools `yaml:"workers,omitempty" jsonschema_description:"Worker pools by name, in file order."`
	// OpenStack is set when the cluster runs on OpenStack.
	OpenStack *OpenStack `yaml:"openstack,omitempty" jsonschema_description:"OpenStack provider (exactly one of openstack and proxmox)."`
	// Proxmox is set when the cluster runs on Proxmox VE.
	Proxmox *Proxmox `yaml:"proxmox,omitempty" jsonschema_description:"Proxmox VE provider (exactly one of openstack and proxmox)."`
	// Network describes the cluster and external networks.
	Network Network `yaml:"network" jsonschema_description:"Cluster network, optional routed external network, DNS and NTP."`
	// Security holds the named ingress rules in file order.
	Security SecurityRules `yaml:"security,omitempty" jsonschema_description:"Named ingress allowlists: rule: {label: CIDR} or rule: {port: N, hosts: {label: CIDR}}."`
	// Tailscale is non-nil when a tailscale section is present in any file.
	Tailscale *Tailscale `yaml:"tailscale,omitempty" jsonschema_description:"Presence keeps the Tailscale extension; an auth_key makes nodes join the tailnet."`
	// Backup is non-nil when a backup section is present in any file: etcd
	// backups are configured.
	Backup *Backup `yaml:"backup,omitempty" jsonschema_description:"Verified, age-encrypted etcd backups (kubectl talosc backup): recipients, dir, max_age, keep. Absent: no backups are configured."`

	// Plugins holds the raw (JSON-compatible) value of each plugin section
	// present in any merged file, keyed by section name.
	Plugins map[string]any `yaml:"-"`
	// Warnings are non-fatal findings, printed on stderr.
	Warnings []string `yaml:"-"`
	// SecretValues are the values of secrets.yaml, hidden wherever they
	// could be printed (RevealSecretValues).
	SecretValues []Secret `json:"-" yaml:"-"`
}

// Talos is the talos section.
type Talos struct {
	// Version is the Talos release, normalised to a leading "v".
	Version string `yaml:"version" jsonschema:"pattern=^v?[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.-]+)?$" jsonschema_description:"Talos release, vMAJOR.MINOR.PATCH, at least v1.13.0."`
	// Extensions are extra official system extensions for every node.
	Extensions []string `yaml:"extensions,omitempty" jsonschema_description:"Official system extensions added to every node, e.g. siderolabs/iscsi-tools."`
	// ConfigPatches are machine-config patches (YAML text) for every node.
	ConfigPatches Patches `yaml:"config_patches,omitempty" jsonschema_description:"Machine-config patches applied to every node, before pool patches."`
	// KubeSpan enables KubeSpan (WireGuard mesh between nodes).
	KubeSpan bool `yaml:"kubespan,omitempty" jsonschema_description:"Enable KubeSpan."`
	// CloudControllerManager runs the Talos cloud controller manager
	// (siderolabs/talos-cloud-controller-manager): kubelets register with
	// --cloud-provider=external and control planes carry its pinned manifest
	// inline. Off by default. It sits under talos, beside kubespan, because
	// it is the Talos CCM (it reads node metadata through the Talos API) and
	// because it is a machine-config switch; kubernetes holds only the
	// release, and a provider's own CCM would belong to that provider's
	// section.
	CloudControllerManager bool `yaml:"cloud_controller_manager,omitempty" jsonschema_description:"Run the Talos cloud controller manager (nodes register with an external cloud provider; control planes carry its pinned manifest). Default false."`
	// ImageFactory is a self-hosted Image Factory (nil: the public one,
	// DefaultImageFactory). Read it through Cluster.ImageFactoryURL.
	ImageFactory *Source `yaml:"image_factory,omitempty" jsonschema_description:"A self-hosted Image Factory (air-gapped sites): url and, for plain http, allow_http. Boot images, schematics and the installer references in every machine config come from it. Default https://factory.talos.dev."`
}

// Kubernetes is the kubernetes section.
type Kubernetes struct {
	// Version is the Kubernetes release, normalised to a leading "v".
	Version string `yaml:"version" jsonschema:"pattern=^v?[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.-]+)?$" jsonschema_description:"Kubernetes release, within the minors the pinned Talos supports."`
	// KubeletRepository is a mirror of the kubelet image repository (nil:
	// DefaultKubeletRepository). Read it through
	// Cluster.KubeletRepositoryURL.
	KubeletRepository *Source `yaml:"kubelet_repository,omitempty" jsonschema_description:"A mirror of the kubelet image repository that check reads the Kubernetes releases from (its tags): url and, for plain http, allow_http. Default https://ghcr.io/siderolabs/kubelet."`
}

// Pool is the control-plane pool or one worker pool.
type Pool struct {
	// Name is "controlplane" or the worker pool's key.
	Name string `yaml:"-"`
	// Count is the number of machines.
	Count int `yaml:"count" jsonschema:"minimum=0" jsonschema_description:"Number of machines (control plane: at least 1, keep odd)."`
	// Flavor is the OpenStack flavor name or id (OpenStack only).
	Flavor string `yaml:"flavor,omitempty" jsonschema_description:"OpenStack flavor name or id (required on OpenStack)."`
	// Disk is the boot disk size in GB.
	Disk int `yaml:"disk" jsonschema:"minimum=1" jsonschema_description:"Boot disk in GB."`
	// Cores is the vCPU count (Proxmox only).
	Cores int `yaml:"cores,omitempty" jsonschema:"minimum=1" jsonschema_description:"vCPUs (required on Proxmox)."`
	// Memory is the memory in GB (Proxmox only).
	Memory int `yaml:"memory,omitempty" jsonschema:"minimum=1" jsonschema_description:"Memory in GB (required on Proxmox)."`
	// Node pins the pool to one Proxmox node (Proxmox only).
	Node string `yaml:"node,omitempty" jsonschema_description:"Proxmox node to place every machine on; must be in proxmox.nodes when that is set."`
	// Extensions are extra system extensions for this pool.
	Extensions []string `yaml:"extensions,omitempty" jsonschema_description:"Extra system extensions for this pool."`
	// ConfigPatches are machine-config patches for this pool.
	ConfigPatches Patches `yaml:"config_patches,omitempty" jsonschema_description:"Machine-config patches for this pool, after the cluster's."`
	// Tags are node labels for this pool (override cluster tags).
	Tags Labels `yaml:"tags,omitempty" jsonschema_description:"Node labels for this pool."`
	// MaxUnavailableNodes is how many of the pool's nodes a Talos upgrade
	// may drain and reboot at once (workers only; 0 means unset). Read it
	// through MaxUnavailable.
	MaxUnavailableNodes int `yaml:"max_unavailable,omitempty" jsonschema:"minimum=1" jsonschema_description:"Workers only: how many of this pool's nodes a Talos upgrade may drain and reboot at once. Default 1; control planes are always upgraded one at a time."`
}

// MaxUnavailable is how many of the pool's nodes a Talos upgrade may take
// down at once: max_unavailable, 1 when unset (the reference upgrades one
// node at a time; kops' maxUnavailable and Omni's rolling parallelism let
// an operator trade capacity for speed). A control-plane pool never sets it
// (the loader refuses the key there), so it is always 1 for etcd's sake.
func (p Pool) MaxUnavailable() int {
	return max(p.MaxUnavailableNodes, 1)
}

// Tailscale is the tailscale section.
type Tailscale struct {
	// LoginServer is the https:// control server (Headscale); empty means
	// public Tailscale.
	LoginServer string `yaml:"login_server,omitempty" jsonschema:"format=uri,pattern=^https://" jsonschema_description:"https:// URL of the control server (e.g. Headscale); omit for public Tailscale."`
	// AuthKey is the pre-auth key; empty means the extension idles.
	AuthKey Secret `yaml:"auth_key,omitempty" jsonschema_description:"Pre-auth key (keep it in secrets.yaml); without it the extension idles."`
}

// Active reports whether nodes join the tailnet: the section is present and
// its auth key is set (the scaffold placeholder counts as unset).
func (t *Tailscale) Active() bool {
	return t != nil && t.AuthKey != "" && !t.AuthKey.IsPlaceholder()
}

// Provider returns "openstack" or "proxmox" ("" on an unvalidated Cluster).
func (c *Cluster) Provider() string {
	switch {
	case c.OpenStack != nil:
		return ProviderOpenStack
	case c.Proxmox != nil:
		return ProviderProxmox
	}
	return ""
}
