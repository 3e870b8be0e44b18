package talosc

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
)

// newBackupCommand is backup, which takes one (backuptake.go), and its
// init. runF replaces the backup's run in tests.
func newBackupCommand(g *Globals, runF func(context.Context, *BackupOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Take a verified, age-encrypted etcd backup of the cluster (backup init sets up its key)",
		Long: `backup takes an etcd snapshot from a healthy control plane, verifies it, and
writes it with talossecrets.yaml and the cluster's configuration as one
age-encrypted bundle to the recipients in cluster.yaml's backup section.

Start with "kubectl talosc backup init": it makes the age identity that
decrypts the bundles and adds its recipient to cluster.yaml.

Each bundle is kept in backup.dir (default backups/ beside cluster.yaml) as
NAME.tar.age with its record NAME.json, which check and status read without
the identity; bundles backup.keep no longer keeps are pruned, never the
newest. Restoring without talosc: age -d -i backup.agekey NAME.tar.age | tar x
gives snapshot.db (for talosctl bootstrap --recover-from), meta.json and the
cluster directory's files. Quiet unless it fails or -v is given.

` + cli.ExitCodesHelp,
	}
	addBackupRun(cmd, g, runF)
	cmd.AddCommand(newBackupInitCommand(g, nil))
	return cmd
}
