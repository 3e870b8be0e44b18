// Package tcargocd is the tc-argocd plugin binary: it registers the cluster
// with an ArgoCD instance and hands it an app-of-apps that installs the
// platform applications (spec §4.3). It runs after rancher, whose cluster id it
// stamps on the ArgoCD cluster Secret.
//
// Configuration lives in the merged argocd section: admins/users (emails),
// git.url and infra.url (set together), sync, automated and the per-app
// sections (metallb, ingress, sealedsecrets, certmanager, cinder, nfs,
// monitoring) usually in cluster.yaml; the apply target kubeconfig and/or
// context, url/token and git.username/git.token usually in secrets.yaml. The
// plugin is configured only by a kubeconfig or context (AR-1).
//
// This build validates the configuration (AR-2), scaffolds it and defers its
// work until the cluster has a kubeconfig (AR-9); rendering and applying the
// ArgoCD resources is not implemented yet, and a converge, destroy or status
// that would need it fails saying so (check reports ok: false).
package tcargocd

import (
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
)

// Name is the plugin name and its config section.
const Name = "argocd"

// Messages shared by the hooks.
const (
	// NeedsKubeconfig is why work is deferred before the first bootstrap
	// (AR-9): the cluster Secret is built from the cluster's kubeconfig.
	NeedsKubeconfig = "needs the cluster's kubeconfig to build the ArgoCD cluster Secret; run converge once the cluster is up"
	// NotImplemented is the honest boundary of this build.
	NotImplemented = "argocd registration" + plugin.NotImplementedSuffix
)

// ClusterScaffold is what "talosc init" appends to cluster.yaml. The
// repository URLs are commented out too: a scaffold must not point ArgoCD at
// example repositories once an apply target is set.
const ClusterScaffold = `# ArgoCD project access uses full email addresses (merged with rancher.admins/users).
argocd:
  admins: []
  users: []
  # Set both URLs together to install the app-of-apps:
  # git:
  #   url: https://git.example.com/kubernetes/cluster.git
  # infra:
  #   url: https://git.example.com/kubernetes/infra.git  # holds the charts/apps chart
  # automated: true          # automated sync, prune and self-heal
  # metallb: {enabled: true}
  # ingress: {enabled: true, class: traefik}
  # certmanager: {enabled: true, email: admin@example.edu}
  # sealedsecrets: {enabled: true}
`

// SecretsScaffold is what "talosc init" appends to secrets.yaml. Everything
// under the key is commented out, so it holds null, which the loader reads as
// absent (spec §2.2 rule 5): the scaffold never activates the plugin, yet the
// key is there, so a second init does not append it again.
const SecretsScaffold = `# Set a kubeconfig path or a kubectl context for the ArgoCD cluster to activate the plugin.
argocd:
  # kubeconfig: ../argocd-kubeconfig
  # context: argocd
  # git:
  #   username: deploy
  #   token: CHANGE-ME
`

// NewCommand returns the tc-argocd root command.
func NewCommand(s cli.Streams) *cobra.Command {
	return plugin.NewCommand(s, Spec())
}

// Spec is the plugin's SDK specification; tests replace its Load and
// LookupEnv. Until the cluster has a kubeconfig its work is deferred (AR-9);
// then it is NotImplemented.
func Spec() plugin.Spec {
	return plugin.Bundled{
		Name:  Name,
		After: []string{"rancher"},
		Short: "Register the cluster with ArgoCD and install its platform applications",

		ClusterScaffold: ClusterScaffold, SecretsScaffold: SecretsScaffold,
		Validate: Validate, Configured: Configured,
		Pending: plugin.Pending{NeedsKubeconfig: NeedsKubeconfig, NotImplemented: NotImplemented},
	}.Spec()
}
