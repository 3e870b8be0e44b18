package talosc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// InitOptions configures init.
type InitOptions struct {
	Globals   *Globals
	Name      string
	OpenStack bool
	Proxmox   bool
	Metal     bool
}

func newInitCommand(g *Globals, runF func(context.Context, *InitOptions) error) *cobra.Command {
	o := &InitOptions{Globals: g}
	cmd := &cobra.Command{
		Use:   "init [NAME]",
		Short: "Scaffold cluster.yaml, secrets.yaml and .gitignore in a cluster directory",
		Long: `init writes a commented cluster.yaml for NAME (default "mycluster"), a
secrets.yaml for the credentials (mode 0600 from the start) and the .gitignore
entries for the files that must never be committed. It never overwrites an
existing cluster.yaml or secrets.yaml; installed plugins append their sections.

` + cli.ExitCodesHelp,
		Example: `  # A new OpenStack cluster "prod" in ./prod
  kubectl talosc init prod --openstack -C prod

  # A Proxmox cluster in the current directory
  kubectl talosc init lab --proxmox`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = "mycluster"
			if len(args) == 1 {
				o.Name = args[0]
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.OpenStack, "openstack", false, "scaffold for OpenStack (the default)")
	f.BoolVar(&o.Proxmox, "proxmox", false, "scaffold for Proxmox VE")
	f.BoolVar(&o.Metal, "metal", false, "add bare-metal machines (not supported yet)")
	cmd.MarkFlagsMutuallyExclusive("openstack", "proxmox")
	return cmd
}

// Validate checks the flags and the name.
func (o *InitOptions) Validate() error {
	if o.Metal {
		if !o.OpenStack && !o.Proxmox {
			return cli.Usagef("--metal requires a VM provider: add --openstack or --proxmox")
		}
		return cli.Usagef("--metal: bare-metal machines are not supported yet by talosc")
	}
	if !regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`).MatchString(o.Name) {
		return cli.Usagef("cluster name %q: use lowercase letters, digits and '-', starting and ending with a letter or digit", o.Name)
	}
	return nil
}

func (o *InitOptions) provider() string {
	if o.Proxmox {
		return config.ProviderProxmox
	}
	return config.ProviderOpenStack
}

// Run writes the scaffold, the .gitignore entries and the plugins' sections.
func (o *InitOptions) Run(ctx context.Context) error {
	s, err := o.Globals.open(ctx, loadNone)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", s.dir, err)
	}
	clusterYAML, secretsYAML := config.Scaffold(o.Name, o.provider())
	for _, f := range []struct {
		name string
		data []byte
		mode fs.FileMode
	}{{config.ClusterFile, clusterYAML, 0o644}, {config.SecretsFile, secretsYAML, 0o600}} {
		p := filepath.Join(s.dir, f.name)
		created, err := createExclusive(p, f.data, f.mode)
		if err != nil {
			return err
		}
		if created {
			s.out.Action(false, "wrote %s", p)
		} else {
			s.out.Info("%s exists; left as it is", p)
		}
	}
	if err := s.updateGitignore("init", false, scaffoldIgnores()...); err != nil {
		return err
	}
	s.pluginInit(ctx, o.Name)
	secrets := filepath.Join(s.dir, config.SecretsFile)
	s.out.Info(`next steps:
  1. put your credentials in %[1]s (%[4]s)
  2. review %[2]s: versions, pools, network, security
  3. kubectl talosc plan -C %[3]s
  4. kubectl talosc converge -C %[3]s`, secrets, filepath.Join(s.dir, config.ClusterFile), s.g.Dir, s.secretsMode(secrets))
	return nil
}

// secretsMode describes the secrets file's actual mode for the next steps,
// and warns when an existing file that init left alone is readable by
// others: init tightens only a file it writes to.
func (s *session) secretsMode(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "gitignored"
	}
	mode := fi.Mode().Perm()
	if config.GroupOrWorldReadable(mode) {
		s.out.Warn("%s is mode %04o: others on this machine can read the credentials you put there; run chmod 600 %s", path, mode, path)
		return fmt.Sprintf("gitignored, but mode %04o: chmod 600 it first", mode)
	}
	return fmt.Sprintf("it is mode %04o and gitignored", mode)
}

// tighten removes the group and other permission bits of path, a secrets
// file init has just written to, and says so when it changed anything.
func (s *session) tighten(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("check the mode of %s: %w", path, err)
	}
	mode := fi.Mode().Perm()
	if mode&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, mode&^0o077); err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	s.out.Action(false, "restricted %s to its owner: mode %04o (it was %04o)", path, mode&^0o077, mode)
	return nil
}

// createExclusive writes data to a new file created with mode from the start;
// an existing file is left alone (created false).
func createExclusive(path string, data []byte, mode fs.FileMode) (created bool, err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return true, fmt.Errorf("write %s: %w", path, werr)
	}
	return true, nil
}

// scaffoldIgnores are the .gitignore entries init writes: the files that
// must never be committed (credentials, the Talos identity, the clients'
// configs, backup identities and the backups themselves).
func scaffoldIgnores() []string {
	return []string{
		config.SecretsFile, config.TalosSecretsFile, config.TalosconfigFile, config.KubeconfigFile, ".metal/",
		config.DefaultBackupDir + "/", "*" + filepath.Ext(config.BackupIdentityFile),
	}
}

// updateGitignore appends the entries .gitignore does not cover yet, and
// only those, under a comment naming the command (by); in a dry run it says
// which it would add.
func (s *session) updateGitignore(by string, dryRun bool, entries ...string) error {
	p := filepath.Join(s.dir, ".gitignore")
	existing, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", p, err)
	}
	have := strings.Fields(string(existing))
	var missing []string
	for _, e := range entries {
		if !slices.ContainsFunc(have, func(line string) bool { return ignores(line, e) }) {
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if dryRun {
		s.out.Action(true, "add %s to %s", strings.Join(missing, ", "), p)
		return nil
	}
	var b bytes.Buffer
	if len(existing) > 0 && !bytes.HasSuffix(existing, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("# added by talosc " + by + "\n" + strings.Join(missing, "\n") + "\n")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	_, werr := f.Write(b.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", p, werr)
	}
	s.out.Action(false, "added %s to %s", strings.Join(missing, ", "), p)
	return nil
}

// ignores reports whether the .gitignore line covers entry: the same
// name, anchored or not, with or without a directory's trailing slash, or a
// glob that matches it (*.agekey).
func ignores(line, entry string) bool {
	norm := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "/"), "/") }
	l, e := norm(line), norm(entry)
	if l == e {
		return true
	}
	ok, err := path.Match(l, e)
	return err == nil && ok
}

// pluginInit runs every installed plugin's init hook and appends the
// sections each returns to cluster.yaml or secrets.yaml when the file does
// not have them yet. Plugin init failures are warnings.
func (s *session) pluginInit(ctx context.Context, name string) {
	r := s.runner()
	for _, p := range s.plugins {
		if !p.Implements(plugin.HookInit) {
			continue
		}
		_, sec, err := r.Call(ctx, p, plugin.HookInit, state.New(name, plugin.HookInit), plugin.CallOptions{})
		if err != nil {
			s.out.Warn("plugin %s: init failed: %v", p.Name, err)
			continue
		}
		var out struct {
			Sections []initSection `json:"sections"`
		}
		if err := decodeOutputs(sec, &out); err != nil {
			s.out.Warn("plugin %s: init: %v", p.Name, err)
			continue
		}
		for _, is := range out.Sections {
			if err := s.appendSection(p.Name, is); err != nil {
				s.out.Warn("plugin %s: init: %v", p.Name, err)
			}
		}
	}
}

type initSection struct {
	Name string `json:"name"`
	File string `json:"file"`
	YAML string `json:"yaml"`
}

// appendSection appends is to its file unless the file already has that
// top-level key (set, or present as a commented-out "# key:" line). Only
// cluster.yaml and secrets.yaml may be written: a plugin cannot steer writes
// elsewhere.
func (s *session) appendSection(pluginName string, is initSection) error {
	if is.File != config.ClusterFile && is.File != config.SecretsFile {
		return fmt.Errorf("section %q targets %q; only %s and %s may be written", is.Name, is.File, config.ClusterFile, config.SecretsFile)
	}
	p := filepath.Join(s.dir, is.File)
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	if hasTopLevelKey(data, is.Name) {
		return nil
	}
	text := is.YAML
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	prefix := "\n"
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		prefix = "\n\n"
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	_, werr := f.WriteString(prefix + "# added by plugin " + pluginName + "\n" + text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", p, werr)
	}
	s.out.Action(false, "added section %s to %s (plugin %s)", is.Name, p, pluginName)
	if is.File == config.SecretsFile {
		return s.tighten(p)
	}
	return nil
}

// hasTopLevelKey reports whether data sets key at the top level or carries it
// commented out at column 0 or 1 ("# key:" / "#key:").
func hasTopLevelKey(data []byte, key string) bool {
	var m map[string]any
	if yaml.Unmarshal(data, &m) == nil {
		if _, ok := m[key]; ok {
			return true
		}
	}
	return regexp.MustCompile(`(?m)^#\s?` + regexp.QuoteMeta(key) + `:`).Match(data)
}
