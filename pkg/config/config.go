// Package config loads and validates cluster.yaml and the files it includes
// (secrets.yaml and others), strictly, in the reference tool's schema.
//
// Load parses every file into a YAML tree that remembers the file and line of
// each value, merges the include files into cluster.yaml key by key, decodes
// the result into Cluster (whose yaml tags are the allowed keys), fills
// defaults and validates, collecting every problem instead of stopping at
// the first. JSONSchema renders the same types as a JSON Schema, and
// Scaffold writes what `init` puts in a new cluster directory.
package config

// File names in a cluster directory.
const (
	ClusterFile       = "cluster.yaml"
	SecretsFile       = "secrets.yaml"
	TalosSecretsFile  = "talossecrets.yaml"
	TalosconfigFile   = "talosconfig"
	KubeconfigFile    = "kubeconfig"
	PlaceholderSecret = "CHANGE-ME"
)

// BackupIdentityFile is the age identity kubectl talosc backup init writes
// by default; it belongs off this machine, never in git.
const BackupIdentityFile = "backup.agekey"

// Provider names.
const (
	ProviderOpenStack = "openstack"
	ProviderProxmox   = "proxmox"
)

// LoadOptions says what the calling command needs from the configuration.
type LoadOptions struct {
	// PluginSections maps each top-level key declared by an installed plugin to
	// that plugin's name. Those keys are accepted and kept raw in Cluster.Plugins.
	PluginSections map[string]string
	// NeedCredentials refuses empty or CHANGE-ME provider/tailscale credentials.
	NeedCredentials bool
	// MissingIncludesOK reads a missing include file as empty, with a warning
	// (check needs no credentials).
	MissingIncludesOK bool
}
