package talosc

import (
	"github.com/spf13/cobra"
)

// newBackupCommand is the backup command group. Until its own run lands it
// has no RunE, so cobra prints its help and lists init.
func newBackupCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Take a verified, age-encrypted etcd backup of the cluster (backup init sets up its key)",
		Long: `backup takes an etcd snapshot from a healthy control plane, verifies it, and
writes it with talossecrets.yaml and the cluster's configuration as one
age-encrypted bundle to the recipients in cluster.yaml's backup section.

Start with "kubectl talosc backup init": it makes the age identity that
decrypts the bundles and adds its recipient to cluster.yaml.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newBackupInitCommand(g, nil))
	return cmd
}
