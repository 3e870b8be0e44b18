package talosc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// DestroyOptions configures destroy.
type DestroyOptions struct {
	Globals *Globals
	DryRun  bool
	Yes     bool
	Output  string
}

func newDestroyCommand(g *Globals, runF func(context.Context, *DestroyOptions) error) *cobra.Command {
	o := &DestroyOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Tear the cluster down: plugins first, then every resource talosc owns",
		Long: `destroy first lists the machines talosc owns for the cluster and asks the API of
its kubeconfig. When no machine is listed but that API answers (the cluster lives
where these credentials cannot see it), it refuses, exit 1, before anything runs.
Otherwise it asks for the cluster name (unless --yes), runs the configured
plugins' destroy hooks in reverse order, then the phases' (nodes, net, image).
Once the owned machines are listed again and none is left, it keeps
talossecrets.yaml (the cluster's CA keys and tokens) beside cluster.yaml as
talossecrets.yaml.destroyed-<UTC time>, mode 0600, and removes talosconfig and
kubeconfig; a machine left keeps every file, exit 1. The shared boot image is
kept. Without an answer on stdin, or on Ctrl-C, it exits 130 and changes nothing.

` + cli.ExitCodesHelp,
		Example: "  # Tear down ./staging without being asked\n  kubectl talosc destroy -C staging --yes",
		Args:    cobra.NoArgs,
		RunE:    outputRunE(o, &o.Output, nil, runF, o.Run),
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "report what would be removed, removing nothing")
	f.BoolVar(&o.Yes, "yes", false, "do not ask for the cluster name")
	f.StringVarP(&o.Output, "output", "o", "text", "also print the final state document on stdout: text (none), json or yaml")
	return cmd
}

// Run lists what it will destroy, refuses a cluster it cannot see,
// confirms, tears down plugins then phases, and once the owned machines
// are proved gone keeps the identity dated and removes the client files.
func (o *DestroyOptions) Run(ctx context.Context) error {
	s, err := o.Globals.open(ctx, loadCredentials)
	if err != nil {
		return err
	}
	found, err := s.survey(ctx)
	if err != nil {
		return err
	}
	if err := found.refusal(s.cfg); err != nil {
		return err
	}
	if err := o.confirmDestroy(ctx, s, found); err != nil {
		return err
	}
	doc, pluginErr := s.destroyPlugins(ctx, o.DryRun)
	extra := []string{"--yes"}
	if o.DryRun {
		extra = []string{"--dry-run"}
	}
	res, err := s.runPhases(ctx, actionDestroy, doc, extra...)
	if err != nil {
		return err
	}
	s.renderPlan(res.doc, o.DryRun)
	if err := s.printDocument(res.doc, o.Output); err != nil {
		return err
	}
	if res.code != 0 {
		return &cli.ExitError{Code: res.code, Err: fmt.Errorf("phase %s failed; %s and the client files were kept", res.failed, config.TalosSecretsFile)}
	}
	if err := s.afterDestroy(res.doc, o.DryRun); err != nil {
		return err
	}
	if pluginErr != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: pluginErr}
	}
	return nil
}

// confirmDestroy says what destroy removes and, unless --yes or
// --dry-run, asks for the cluster name.
func (o *DestroyOptions) confirmDestroy(ctx context.Context, s *session, found destroySurvey) error {
	name := s.cfg.Name
	s.out.Warn("destroy %s: every resource talosc owns for this cluster (%s), then %s and %s, will be removed; %s is kept, dated",
		name, machinesFound(found.machines), config.TalosconfigFile, config.KubeconfigFile, config.TalosSecretsFile)
	if o.Yes || o.DryRun {
		return nil
	}
	return confirm(ctx, o.Globals.Streams, "type the cluster name to confirm: ", name)
}

// destroyPlugins runs the active plugins' destroy hooks on a new document
// when the cluster was ever bootstrapped; the plugins' error is returned
// with the document, for destroy to report after the phases ran.
func (s *session) destroyPlugins(ctx context.Context, dryRun bool) (*state.Document, error) {
	doc := state.New(s.cfg.Name, actionDestroy)
	if _, bootstrapped := phase.ClientFile(s.cfg, config.KubeconfigFile); !bootstrapped {
		s.out.Info("plugins: the cluster was never bootstrapped (no kubeconfig); skipping their destroy hooks")
		return doc, nil
	}
	return s.runActivePlugins(ctx, plugin.HookDestroy, doc, plugin.CallOptions{DryRun: dryRun, Yes: true})
}

// afterDestroy, once the phases succeeded and (unless dryRun) doc proves
// the owned machines gone, keeps the identity dated and removes the
// client files.
func (s *session) afterDestroy(doc *state.Document, dryRun bool) error {
	if !dryRun {
		if err := destroyedAll(doc); err != nil {
			return err
		}
	}
	if err := s.keepIdentity(dryRun, time.Now()); err != nil {
		return err
	}
	return s.resetFiles(dryRun)
}

// machinesFound says what the provider listed.
func machinesFound(machines []string) string {
	if len(machines) == 0 {
		return "the provider lists no machine"
	}
	return fmt.Sprintf("%d machine(s): %s", len(machines), strings.Join(machines, ", "))
}

// resetFiles removes the client files once the cloud side is gone: they
// are derived from the identity (kept by keepIdentity) and name endpoints
// that no longer exist; a later converge would read a kubeconfig left
// behind as a cluster that was bootstrapped.
func (s *session) resetFiles(dryRun bool) error {
	for _, f := range []string{config.TalosconfigFile, config.KubeconfigFile, "bootstrapped"} {
		p := filepath.Join(s.dir, f)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if dryRun {
			s.out.Action(true, "remove %s", p)
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		s.out.Action(false, "removed %s", p)
	}
	return nil
}
