// Package tcrancher is the tc-rancher plugin binary: it registers the cluster
// with a Rancher server and keeps its owner and member lists in sync (spec
// §4.2).
//
// Configuration: rancher.admins (usernames → cluster-owner) and rancher.users
// (→ cluster-member), usually in cluster.yaml, and the credentials rancher.url
// and rancher.token, usually in secrets.yaml. The plugin is configured only
// when the merged rancher section is a mapping with a non-empty url and token.
// The url must be https (the token goes there) unless rancher.allow_http is
// true.
//
// This build validates the configuration (RA-1), scaffolds it and defers its
// work until the cluster has a kubeconfig; talking to the Rancher API is not
// implemented yet, and a converge, destroy or status that would need it fails
// saying so (check reports ok: false).
package tcrancher

import (
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
)

// Name is the plugin name and its config section.
const Name = "rancher"

// Messages shared by the hooks.
const (
	// NeedsKubeconfig is why work is deferred before the first bootstrap.
	NeedsKubeconfig = "needs the cluster's kubeconfig; run converge once the cluster is up"
	// NotImplemented is the honest boundary of this build.
	NotImplemented = "rancher registration" + plugin.NotImplementedSuffix
)

// ClusterScaffold is what "talosc init" appends to cluster.yaml.
const ClusterScaffold = `# Rancher membership uses usernames: admins -> cluster-owner, users -> cluster-member.
rancher:
  admins: []
  users: []
`

// SecretsScaffold is what "talosc init" appends to secrets.yaml. The
// credentials are commented out, so the top-level key holds null, which the
// loader reads as absent (spec §2.2 rule 5): the scaffold never activates the
// plugin, yet the key is there, so a second init does not append it again.
const SecretsScaffold = `# Set both values to activate Rancher registration.
rancher:
  # url: https://rancher.example.edu
  # token: token-xxxxx:yyyyyyyyyyyy
`

// NewCommand returns the tc-rancher root command.
func NewCommand(s cli.Streams) *cobra.Command {
	return plugin.NewCommand(s, Spec())
}

// Spec is the plugin's SDK specification; tests replace its Load and
// LookupEnv. Until the cluster has a kubeconfig its work is deferred;
// then it is NotImplemented.
func Spec() plugin.Spec {
	return plugin.Bundled{
		Name:  Name,
		Short: "Register the cluster with Rancher and keep its members in sync",

		ClusterScaffold: ClusterScaffold, SecretsScaffold: SecretsScaffold,
		Validate: Validate, Configured: Configured,
		Pending: plugin.Pending{NeedsKubeconfig: NeedsKubeconfig, NotImplemented: NotImplemented},
	}.Spec()
}
