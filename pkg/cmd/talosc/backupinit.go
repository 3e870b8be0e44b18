package talosc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"filippo.io/age"
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/atomicfile"
	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
)

// BackupInitOptions configures backup init.
type BackupInitOptions struct {
	Globals *Globals
	// Identity is the age identity file to create; "" means
	// config.BackupIdentityFile in the cluster directory.
	Identity string
	// DryRun says what would be written and writes nothing.
	DryRun bool
}

func newBackupInitCommand(g *Globals, runF func(context.Context, *BackupInitOptions) error) *cobra.Command {
	o := &BackupInitOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make the age identity that decrypts this cluster's backups and add its recipient to cluster.yaml",
		Long: `backup init generates an age X25519 identity, writes it to --identity
(default ` + config.BackupIdentityFile + ` in the cluster directory) with mode 0600, and adds its
recipient (the public key) to backup.recipients in cluster.yaml, creating the
backup section when there is none; comments and layout are kept. When an
include file already holds backup.recipients (or the backup section), that
file is edited instead. The identity file and backups/ are added to .gitignore.

The identity is the only key to the backups: copy it off this machine and
keep it safe. A restore needs it, and whoever holds it can read every backup,
the cluster's secrets included. backup init never overwrites an existing
identity file and never prints the secret key.

` + cli.ExitCodesHelp,
		Example: `  # A new identity in the cluster directory ./prod
  kubectl talosc backup init -C prod

  # Keep the identity outside the cluster directory from the start
  kubectl talosc backup init -C prod --identity ~/keys/prod-backup.agekey`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Identity, "identity", "", "the age identity `FILE` to create (default "+config.BackupIdentityFile+" in the cluster directory)")
	f.BoolVar(&o.DryRun, "dry-run", false, "say what would be written, writing nothing")
	return cmd
}

// Run writes the identity, the recipient and the .gitignore entries.
func (o *BackupInitOptions) Run(ctx context.Context) error {
	s, err := o.Globals.open(ctx, loadNone)
	if err != nil {
		return err
	}
	identity, err := o.identityPath(s.dir)
	if err != nil {
		return err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return fmt.Errorf("generate an age identity: %w", err)
	}
	edit, err := config.AddBackupRecipient(s.dir, id.Recipient().String())
	var probs config.Problems
	if errors.As(err, &probs) || errors.Is(err, fs.ErrNotExist) {
		return cli.Usage(err)
	}
	if err != nil {
		return err
	}
	ignore := []string{config.DefaultBackupDir + "/"}
	if rel, err := filepath.Rel(s.dir, identity); err == nil && filepath.IsLocal(rel) {
		ignore = append([]string{filepath.ToSlash(rel)}, ignore...)
	}
	if o.DryRun {
		s.out.Action(true, "create the age identity %s (mode 0600)", identity)
		s.out.Action(true, "add its recipient to backup.recipients in %s", edit.Path)
		return s.updateGitignore("backup init", true, ignore...)
	}
	if err := s.writeBackupIdentity(identity, id, edit); err != nil {
		return err
	}
	if err := s.updateGitignore("backup init", false, ignore...); err != nil {
		return err
	}
	s.out.Info("recipient (public, fine to share): %s", id.Recipient())
	s.out.Warn("copy %s off this machine now and keep it safe: a restore needs it, and whoever has it "+
		"can read every backup of this cluster, its secrets included (talossecrets.yaml and all of etcd)", identity)
	return nil
}

// identityPath is the identity file to create, refused when it exists:
// bundles already encrypted to it would become unreadable.
func (o *BackupInitOptions) identityPath(dir string) (string, error) {
	p := filepath.Join(dir, config.BackupIdentityFile)
	if o.Identity != "" {
		abs, err := filepath.Abs(o.Identity)
		if err != nil {
			return "", cli.Usage(fmt.Errorf("--identity %q: %w", o.Identity, err))
		}
		p = abs
	}
	if _, err := os.Lstat(p); err == nil {
		return "", identityExists(p)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("check %s: %w", p, err)
	}
	return p, nil
}

func identityExists(p string) error {
	return fmt.Errorf("%s exists; backup init never overwrites an identity (backups encrypted to it would become unreadable): "+
		"name a new file with --identity, or add its recipient (age-keygen -y %s) to backup.recipients yourself", p, p)
}

// writeBackupIdentity creates the identity file with mode 0600 from the
// start, synced and never over an existing file, then writes the configuration edit keeping the file's mode. When
// the edit cannot be written the identity, never used, is removed again, so
// that a second run starts afresh.
func (s *session) writeBackupIdentity(path string, id *age.X25519Identity, edit *config.RecipientEdit) error {
	text := "# talosc backup identity: decrypts this cluster's backups (age -d -i " + filepath.Base(path) + ")\n" +
		"# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	err := atomicfile.Write(path, []byte(text), atomicfile.Options{Mode: 0o600})
	if errors.Is(err, fs.ErrExist) {
		return identityExists(path)
	}
	if err != nil {
		return err
	}
	err = atomicfile.Write(edit.Path, edit.Data, atomicfile.Options{Mode: edit.Mode, Replace: true})
	if err != nil {
		if rerr := os.Remove(path); rerr != nil {
			return fmt.Errorf("add the recipient to %s: %w (and remove the unused identity %s: %w)", edit.File, err, path, rerr)
		}
		return fmt.Errorf("add the recipient to %s: %w (the new identity, never used, was removed)", edit.File, err)
	}
	s.out.Action(false, "wrote the age identity %s (mode 0600)", path)
	s.out.Action(false, "added its recipient to backup.recipients in %s", edit.Path)
	return nil
}
