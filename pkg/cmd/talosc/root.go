// Package talosc is the kubectl-talosc front door: it scaffolds cluster
// directories, runs the phase binaries joined by pipes, runs the plugins, and
// renders what they report.
package talosc

import (
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/version"
)

// NewRoot returns the kubectl-talosc root command.
func NewRoot(s cli.Streams) *cobra.Command {
	g := &Globals{Streams: s, Host: OSHost()}
	root := &cobra.Command{
		Use:   "kubectl-talosc",
		Short: "Build and run Talos Kubernetes clusters on OpenStack and Proxmox from cluster.yaml",
		Long: `talosc builds and runs Talos Linux Kubernetes clusters on OpenStack and Proxmox
from one declarative cluster.yaml. Edit cluster.yaml, run "kubectl talosc plan"
to see what would change, and "kubectl talosc converge" to make it so.

The work is done by phase binaries (tc-image, tc-net, tc-nodes) joined by pipes,
then by plugins: any other tc-NAME executable on PATH.

` + cli.ExitCodesHelp,
		Version:     version.Version(),
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl talosc"},
		Args:        cobra.NoArgs,
		RunE:        func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("talosc {{.Version}}\n")
	root.PersistentFlags().StringVarP(&g.Dir, "dir", "C", ".", "the cluster directory `DIR`, holding cluster.yaml")
	root.AddCommand(
		newInitCommand(g, nil),
		newRunCommand(g, actionPlan, nil),
		newRunCommand(g, actionConverge, nil),
		newReportCommand(g, actionStatus, nil),
		newReportCommand(g, actionCheck, nil),
		newDestroyCommand(g, nil),
		newBackupCommand(g, nil),
		newPluginCommand(g),
		newSchemaCommand(g),
	)
	return root
}
