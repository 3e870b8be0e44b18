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
// What it does, against two clusters:
//   - the management cluster named by argocd.kubeconfig and/or
//     argocd.context (AR-1), where it server-side applies (field manager
//     "talosc") Argo CD's cluster Secret built from this cluster's
//     kubeconfig and stamped with the Rancher cluster id (AR-7: the rancher
//     plugin's published cluster_id, else the downstream agent's), the
//     cluster's AppProject with admin and user roles whose policies pass
//     Argo CD's own rules (checked here: the CRD does not), and, with
//     git.url and infra.url, the repository Secret and the root and cluster
//     Applications, whose Helm values are serialized YAML (AR-3…AR-5) with
//     the MetalLB and ingress addresses of the net phase's outputs;
//   - this cluster, which alone gets the Cinder cloud.conf Secret (AR-6).
//
// Every object carries the labels app.kubernetes.io/managed-by=talosc and
// talosc.io/cluster=<name>. Converge and destroy read every object first and
// refuse, before writing anything, to take over one of the same name that
// lacks them; destroy deletes only objects carrying them (AR-8), each by
// UID. Plan (converge --dry-run) writes nothing and lists what would be
// created, updated or deleted, telling an update from the API's own dry run
// of the apply. Status lists which objects exist, check whether each is as
// converge would leave it. Secret contents are never printed. Before the
// cluster has a kubeconfig every hook defers (AR-9).
package tcargocd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
)

// Name is the plugin name and its config section.
const Name = "argocd"

// NeedsKubeconfig is why work is deferred before the first bootstrap (AR-9):
// the cluster Secret is built from the cluster's kubeconfig.
const NeedsKubeconfig = "needs the cluster's kubeconfig to build the ArgoCD cluster Secret; run converge once the cluster is up"

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
// LookupEnv.
func Spec() plugin.Spec {
	spec := plugin.Bundled{
		Name:  Name,
		After: []string{"rancher"},
		Short: "Register the cluster with ArgoCD and install its platform applications",

		ClusterScaffold: ClusterScaffold, SecretsScaffold: SecretsScaffold,
		Validate: Validate, Configured: Configured,
		Work: plugin.Hooks{Converge: converge, Destroy: destroy, Status: status, Check: check},
	}.Spec()
	spec.Hooks.Validate = validateHook
	return spec
}

// validateHook is Validate of the merged section plus what needs the rest
// of the configuration: cinder's OpenStack credentials (AR-6).
func validateHook(_ context.Context, c *plugin.Context) []string {
	raw := c.Section[Name]
	problems := Validate(raw)
	if len(problems) > 0 || c.Config == nil {
		return problems
	}
	s := readSettings(c.Config, raw)
	if _, err := openstackFrom(c.Config, s.enabled("cinder")); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	return problems
}
