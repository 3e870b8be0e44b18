package talosc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// Host is the front door's view of the machine it runs on. Tests replace it.
type Host struct {
	// Self is the front door's own executable; phase binaries next to it win
	// over ones on PATH.
	Self string
	// Environ is the environment children inherit.
	Environ []string
}

// OSHost describes the running process.
func OSHost() Host {
	self, err := os.Executable()
	if err == nil {
		if resolved, rerr := filepath.EvalSymlinks(self); rerr == nil {
			self = resolved
		}
	}
	return Host{Self: self, Environ: os.Environ()}
}

// Getenv reads a variable from the host environment.
func (h Host) Getenv(key string) string {
	v, _ := h.LookupEnv(key)
	return v
}

// LookupEnv reads a variable from the host environment.
func (h Host) LookupEnv(key string) (string, bool) {
	return cli.LookupEnv(h.Environ, key)
}

// Globals are the flags and seams every subcommand shares.
type Globals struct {
	Streams cli.Streams
	Host    Host
	Dir     string
	// Load reads cluster.yaml; nil means config.Load.
	Load func(dir string, o config.LoadOptions) (*config.Cluster, error)
}

// session is what one command run works with.
type session struct {
	g       *Globals
	dir     string
	cfg     *config.Cluster
	plugins []plugin.Plugin
	out     *ui.Printer
	env     []string
}

type loadMode int

const (
	loadNone          loadMode = iota // no cluster.yaml needed
	loadOptional                      // use cluster.yaml when present
	loadCredentials                   // needs provider credentials
	loadNoCredentials                 // never talks to the provider (check)
)

// open discovers plugins and loads the configuration as mode asks.
func (g *Globals) open(ctx context.Context, mode loadMode) (*session, error) {
	dir, err := filepath.Abs(g.Dir)
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("cluster directory %q: %w", g.Dir, err))
	}
	s := &session{g: g, dir: dir, out: ui.New(g.Streams.ErrOut, g.Host.Environ)}
	for _, w := range phase.TestKnobWarnings(g.Host.LookupEnv) {
		s.out.Warn("%s", w)
	}
	s.plugins, err = plugin.Discover(ctx, plugin.DiscoverOptions{
		PathEnv: g.Host.Getenv("PATH"),
		Env:     g.Host.Environ,
		Exclude: plugin.Builtins(),
		Warn:    func(msg string) { s.out.Warn("%s", msg) },
		Beside:  besideDir(g.Host.Self),
	})
	if err != nil {
		return nil, err
	}
	if mode == loadOptional {
		if _, err := os.Stat(filepath.Join(dir, config.ClusterFile)); errors.Is(err, fs.ErrNotExist) {
			mode = loadNone
		} else {
			mode = loadNoCredentials
		}
	}
	if mode != loadNone {
		s.cfg, err = s.load(mode)
		if err != nil {
			return nil, cli.Usage(err)
		}
		for _, w := range s.cfg.Warnings {
			s.out.Warn("%s", w)
		}
	}
	s.env = s.childEnv()
	return s, nil
}

// load loads cluster.yaml of the session's directory in mode.
func (s *session) load(mode loadMode) (*config.Cluster, error) {
	load := s.g.Load
	if load == nil {
		load = config.Load
	}
	return load(s.dir, config.LoadOptions{
		PluginSections:    plugin.Sections(s.plugins),
		NeedCredentials:   mode == loadCredentials,
		MissingIncludesOK: mode == loadNoCredentials,
	})
}

// besideDir is the directory of the executable self, or "" when unknown.
func besideDir(self string) string {
	if self == "" {
		return ""
	}
	return filepath.Dir(self)
}

// childEnv is the environment of every phase and plugin the front door runs.
func (s *session) childEnv() []string {
	return cli.WithEnv(s.g.Host.Environ, map[string]string{
		plugin.EnvPath:      s.g.Host.Self,
		plugin.EnvDir:       s.dir,
		plugin.EnvConfig:    filepath.Join(s.dir, config.ClusterFile),
		plugin.EnvStateAPI:  state.APIVersion,
		plugin.EnvSections:  plugin.SectionsEnv(s.plugins),
		plugin.EnvKubeconf:  filepath.Join(s.dir, config.KubeconfigFile),
		plugin.EnvTalosconf: filepath.Join(s.dir, config.TalosconfigFile),
	})
}

// phasePath finds tc-NAME next to the front door first, then on PATH.
func (s *session) phasePath(name string) (string, error) {
	p, err := plugin.Sibling(plugin.Prefix+name, s.g.Host.Self, s.g.Host.Getenv("PATH"))
	if err != nil {
		return "", fmt.Errorf("phase binary: %w", err)
	}
	return p, nil
}

// runner runs plugin hooks with the session's environment.
func (s *session) runner() *plugin.Runner {
	return &plugin.Runner{Env: s.env, Stderr: s.g.Streams.ErrOut}
}
