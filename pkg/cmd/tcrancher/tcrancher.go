// Package tcrancher is the tc-rancher plugin binary: it registers the cluster
// with a Rancher server and keeps its owner and member lists in sync (spec
// §4.2).
//
// Configuration: rancher.admins (usernames → cluster-owner) and rancher.users
// (→ cluster-member), usually in cluster.yaml, and the credentials rancher.url
// and rancher.token, usually in secrets.yaml. The plugin is configured only
// when the merged rancher section is a mapping with a non-empty url and token.
// The url must be https (the token goes there) unless rancher.allow_http is
// true; rancher.ca_file names a CA bundle (relative to the cluster
// directory) for a Rancher whose certificate the system does not trust.
//
// Every hook but validate and init waits for the cluster's kubeconfig
// (deferred before the first bootstrap). Converge resolves every member
// to exactly one Rancher principal (RA-5, RA-6) and decides the cluster's
// identity from the downstream agent (RA-4; a pending Rancher cluster
// with no agent anywhere is resumed only when it carries talosc's marker
// for this cluster, the fingerprint of its Kubernetes CA) before it
// changes anything;
// then it imports the cluster (RA-2, RA-3: a management cluster, a
// registration token, its manifest server-side applied downstream) when
// it is not yet, reconciles the cluster-owner and cluster-member bindings
// (RA-7) and publishes {cluster_id, url, members} (RA-8). Status and check
// report RA-9's fields; destroy deletes the Rancher cluster and uninstalls
// the agent, or an orphaned agent alone (RA-10). Which real-Rancher
// behaviour each rule follows is said where it is implemented, here and in
// package rancherapi.
package tcrancher

import (
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
)

// Name is the plugin name and its config section.
const Name = "rancher"

// NeedsKubeconfig is why work is deferred before the first bootstrap.
const NeedsKubeconfig = "needs the cluster's kubeconfig; run converge once the cluster is up"

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
// LookupEnv.
func Spec() plugin.Spec {
	return plugin.Bundled{
		Name:  Name,
		Short: "Register the cluster with Rancher and keep its members in sync",

		ClusterScaffold: ClusterScaffold, SecretsScaffold: SecretsScaffold,
		Validate: Validate, Configured: Configured,
		Work: plugin.Hooks{Converge: converge, Destroy: destroy, Status: report, Check: report},
	}.Spec()
}
