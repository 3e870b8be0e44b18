package plugin

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/cli"
)

// Environment variables of the plugin contract. The front door sets them for
// every phase and plugin it runs; the SDK and the phases read them.
const (
	// EnvPath is the front door's own executable.
	EnvPath = "TALOSC_PATH"
	// EnvDir is the absolute cluster directory.
	EnvDir = "TALOSC_DIR"
	// EnvConfig is the absolute path of cluster.yaml.
	EnvConfig = "TALOSC_CONFIG"
	// EnvStateAPI is the state document apiVersion the front door speaks.
	EnvStateAPI = "TALOSC_STATE_API"
	// EnvPluginName is the name of the plugin being run (set by Runner).
	EnvPluginName = "TALOSC_PLUGIN_NAME"
	// EnvSections lists every installed plugin's config sections as
	// comma-separated "section=plugin" pairs (see SectionsEnv).
	EnvSections = "TALOSC_PLUGIN_SECTIONS"
	// EnvKubeconf is the path of the cluster's kubeconfig (it may not exist).
	EnvKubeconf = "TALOSC_KUBECONFIG"
	// EnvTalosconf is the path of the cluster's talosconfig (it may not exist).
	EnvTalosconf = "TALOSC_TALOSCONFIG"
	// EnvTimeout is a Go duration that overrides every hook and describe
	// timeout. It is meant for tests.
	EnvTimeout = "TALOSC_PLUGIN_TIMEOUT"
	// EnvNoColor is passed through unchanged (https://no-color.org).
	EnvNoColor = "NO_COLOR"
)

// Default timeouts of hooks; EnvTimeout overrides all of them.
const (
	// DescribeTimeout bounds "describe" during discovery.
	DescribeTimeout = 10 * time.Second
	// QuickHookTimeout bounds describe, init, validate and configured.
	QuickHookTimeout = 30 * time.Second
	// ReportHookTimeout bounds status and check.
	ReportHookTimeout = 2 * time.Minute
	// ChangeHookTimeout bounds converge and destroy.
	ChangeHookTimeout = 30 * time.Minute
)

// DefaultTimeout is the timeout of hook when nothing overrides it.
func DefaultTimeout(hook string) time.Duration {
	switch hook {
	case HookConverge, HookDestroy:
		return ChangeHookTimeout
	case HookStatus, HookCheck:
		return ReportHookTimeout
	default:
		return QuickHookTimeout
	}
}

// Sections maps each config section declared by ps to the plugin declaring
// it. When two plugins declare the same section the first in ps keeps it.
func Sections(ps []Plugin) map[string]string {
	m := map[string]string{}
	for _, p := range ps {
		for _, s := range p.ConfigSections {
			if _, taken := m[s]; !taken && s != "" {
				m[s] = p.Name
			}
		}
	}
	return m
}

// SectionsEnv is the EnvSections value for ps: "section=plugin" pairs sorted
// by section and joined with commas.
func SectionsEnv(ps []Plugin) string {
	m := Sections(ps)
	pairs := make([]string, 0, len(m))
	for _, s := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, s+"="+m[s])
	}
	return strings.Join(pairs, ",")
}

// ParseSectionsEnv reads an EnvSections value. Malformed pairs are ignored.
func ParseSectionsEnv(v string) map[string]string {
	m := map[string]string{}
	for pair := range strings.SplitSeq(v, ",") {
		s, p, ok := strings.Cut(strings.TrimSpace(pair), "=")
		s, p = strings.TrimSpace(s), strings.TrimSpace(p)
		if ok && s != "" && p != "" {
			m[s] = p
		}
	}
	return m
}

// SelfDir is the directory of the running executable, symlinks resolved
// (krew links its binaries), or "" when it cannot be told.
func SelfDir() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return filepath.Dir(self)
}

// ConfigSections returns the section → plugin map to load cluster.yaml with:
// EnvSections when the front door set it, otherwise the sections of the
// plugins discovered on PATH and beside (so a phase or plugin run by hand
// still accepts every installed plugin's sections). lookupEnv reads the
// environment; beside is the running binary's directory (see
// DiscoverOptions.Beside); warn receives discovery warnings.
func ConfigSections(ctx context.Context, lookupEnv func(string) (string, bool), beside string, warn func(string)) (map[string]string, error) {
	if v, ok := lookupEnv(EnvSections); ok {
		return ParseSectionsEnv(v), nil
	}
	path, _ := lookupEnv("PATH")
	ps, err := Discover(ctx, DiscoverOptions{PathEnv: path, Exclude: Builtins(), Warn: warn, Beside: beside})
	if err != nil {
		return nil, err
	}
	return Sections(ps), nil
}

// timeoutOverride parses EnvTimeout from env; ok is false when it is unset or
// not a positive duration.
func timeoutOverride(env []string) (time.Duration, bool) {
	v, ok := cli.LookupEnv(env, EnvTimeout)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}
