package talosc

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
)

// BackupOptions configures backup (taking one; `backup init` is init's).
type BackupOptions struct {
	Globals *Globals
	Output  string
	// Textfile is where the backup's metrics go (node-exporter's textfile
	// collector), also when the backup failed.
	Textfile string
	// Verbose prints a line about the stored backup (text output).
	Verbose bool
}

// addBackupRun makes cmd take a backup: `tc-nodes backup`, which streams,
// verifies, stores and prunes, then the textfile and the report.
func addBackupRun(cmd *cobra.Command, g *Globals, runF func(context.Context, *BackupOptions) error) {
	o := &BackupOptions{Globals: g}
	cmd.Args = cobra.NoArgs
	cmd.RunE = outputRunE(o, &o.Output, nil, runF, o.Run)
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text (quiet unless -v), json or yaml (the stored bundle's record)")
	f.StringVar(&o.Textfile, "textfile", "", "also write the newest backup's metrics to `FILE` (node-exporter's textfile collector format, written atomically, also when the backup fails)")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "show each step's progress on stderr, and say what was stored and pruned")
	cmd.Example = `  # Take a backup by hand
  kubectl talosc backup -C prod -v

  # From cron, hourly: quiet unless it fails (exit 1), with metrics for node-exporter
  0 * * * * kubectl talosc backup -C /srv/clusters/prod --textfile /var/lib/node_exporter/textfile/talosc-prod-backup.prom`
}

// Run takes the backup.
func (o *BackupOptions) Run(ctx context.Context) error {
	if err := refuseClusterFile(o.Globals.Dir, "--textfile", o.Textfile); err != nil {
		return err
	}
	s, err := o.Globals.open(ctx, loadCredentials)
	if err != nil {
		return err
	}
	if s.cfg.Backup == nil {
		return cli.Usagef("cluster.yaml has no backup section: run kubectl talosc backup init, which adds one with a new age recipient")
	}
	args := []string{phase.ActionBackup}
	if !o.Verbose {
		args = append(args, "--quiet")
	}
	res, runErr := s.runPipeline(ctx, []stage{{phase.Nodes, args}}, state.New(s.cfg.Name, phase.ActionBackup))
	var took sections.Backup
	if runErr == nil {
		runErr = tookBackup(res, &took)
	}
	textErr := o.writeTextfile(s.cfg.Name, took.Newest, runErr)
	if runErr != nil {
		return errors.Join(runErr, textErr)
	}
	if done, err := writeStructured(s.g.Streams.Out, o.Output, took); done || err != nil {
		return errors.Join(err, textErr)
	}
	if o.Verbose {
		r := took.Record
		fmt.Fprintf(s.g.Streams.Out, "stored %s in %s: etcd revision %d, %d keys, from %s, %d bytes\n", r.Name, took.Target, r.Meta.Revision, r.Meta.Keys, r.Meta.Node, r.BundleSize)
		for _, p := range took.Pruned {
			fmt.Fprintf(s.g.Streams.Out, "pruned %s (backup.keep)\n", p)
		}
	}
	return textErr
}

// tookBackup reads what the backup stored from the nodes section (and the
// newest backup it read back, also when it failed), or why it failed.
func tookBackup(res pipeResult, took *sections.Backup) error {
	sec, ok, err := res.doc.Section(phase.Nodes)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("tc-nodes backup wrote no nodes section")
	}
	decodeErr := decodeOutputs(sec, took)
	if res.code != 0 {
		msg := "failed"
		if sec.Error != nil {
			msg = sec.Error.Message
		}
		return &cli.ExitError{Code: res.code, Err: fmt.Errorf("backup: %s", msg)}
	}
	return decodeErr
}

// writeTextfile writes the newest backup's metrics, which tc-nodes read
// from the target after the run, whatever it did (only it reaches a
// Swift container); a run that reported none writes backup_ok 0.
func (o *BackupOptions) writeTextfile(cluster string, newest *report.BackupCheck, runErr error) error {
	if o.Textfile == "" {
		return nil
	}
	if newest == nil {
		newest = &report.BackupCheck{Attention: fmt.Sprintf("tc-nodes backup reported no newest backup: %v", runErr)}
	}
	return report.WriteBackupTextfile(o.Textfile, cluster, newest)
}
