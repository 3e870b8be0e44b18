package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/state"
)

// describeParallelism bounds how many "describe" calls run at once.
const describeParallelism = 8

// DiscoverOptions configures Discover.
type DiscoverOptions struct {
	// PathEnv is the PATH value to search.
	PathEnv string
	// Env is the environment of the describe calls; nil means the current
	// process's environment.
	Env []string
	// Exclude lists names that are never plugins (the builtins, Builtins()).
	Exclude []string
	// Warn receives warnings: duplicates, refused relative PATH entries,
	// failed describes, cycles, name mismatches. nil discards them.
	Warn func(msg string)
	// Timeout bounds each describe call; 0 means EnvTimeout from Env, else
	// DescribeTimeout.
	Timeout time.Duration
	// Beside is searched after PATH: the directory of the running talosc
	// binary, where a krew or tarball install puts the bundled plugins
	// without putting them on PATH. Plugins on PATH still win.
	Beside string
}

// candidate is a tc-NAME executable found on PATH.
type candidate struct {
	name, path string
	info       os.FileInfo
}

// Discover finds the installed plugins on o.PathEnv and returns them in run
// order (see Order). A plugin that cannot be described is skipped with a
// warning; the error is non-nil only when ctx ends.
func Discover(ctx context.Context, o DiscoverOptions) ([]Plugin, error) {
	warn := o.Warn
	if warn == nil {
		warn = func(string) {}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		env := o.Env
		if env == nil {
			env = os.Environ()
		}
		var ok bool
		if timeout, ok = timeoutOverride(env); !ok {
			timeout = DescribeTimeout
		}
	}
	pathEnv := o.PathEnv
	if o.Beside != "" {
		pathEnv += string(os.PathListSeparator) + o.Beside
	}
	cands := findCandidates(pathEnv, o.Exclude, warn)
	descs := describeAll(ctx, cands, o.Env, timeout)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("discover plugins: %w", err)
	}
	ps := make([]Plugin, 0, len(cands))
	for i, c := range cands {
		if p, ok := accept(c, descs[i], warn); ok {
			ps = append(ps, p)
		}
	}
	ordered := Order(ps, warn)
	warnSectionConflicts(ordered, warn)
	return ordered, nil
}

// validName is what a plugin name may look like: it becomes a state section
// name, a config section owner and a word on the command line.
func validName(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// findCandidates lists the tc-NAME executables on pathEnv, first on PATH
// first, applying the exclusion, relative-entry, reserved-name and duplicate
// rules.
func findCandidates(pathEnv string, exclude []string, warn func(string)) []candidate {
	var (
		out      []candidate
		seenDirs = map[string]bool{}
		byName   = map[string]int{}
	)
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			refuseRelative(dir, exclude, warn)
			continue
		}
		key := filepath.Clean(dir)
		if resolved, err := filepath.EvalSymlinks(key); err == nil {
			key = resolved // /bin and /usr/bin are often one directory
		}
		if seenDirs[key] {
			continue
		}
		seenDirs[key] = true
		for _, c := range executables(dir) {
			switch {
			case slices.Contains(exclude, c.name):
				continue
			case !validName(c.name):
				warn(fmt.Sprintf("ignoring %s: a plugin name is lowercase letters, digits and '-'", c.path))
				continue
			case slices.Contains(Reserved(), c.name):
				warn(fmt.Sprintf("ignoring %s: %q is reserved (it is the \"plugin %s\" command)", c.path, c.name, c.name))
				continue
			}
			if i, dup := byName[c.name]; dup {
				if !os.SameFile(out[i].info, c.info) {
					warn(fmt.Sprintf("plugin %s: %s is shadowed by %s, which comes first on PATH; only the first is used", c.name, c.path, out[i].path))
				}
				continue
			}
			byName[c.name] = len(out)
			out = append(out, c)
		}
	}
	return out
}

// refuseRelative warns about plugins reachable only through a relative (or
// empty, meaning ".") PATH entry: like exec.ErrDot, they are never run. An
// entry without plugins in it is skipped quietly.
func refuseRelative(dir string, exclude []string, warn func(string)) {
	shown := dir
	if dir == "" {
		dir, shown = ".", "(empty)"
	}
	for _, c := range executables(dir) {
		if slices.Contains(exclude, c.name) {
			continue
		}
		warn(fmt.Sprintf("ignoring %s: it is found through the relative PATH entry %s, and plugins only run from absolute PATH directories", c.path, shown))
	}
}

// executables lists the tc-* regular files in dir with an execute bit, in
// name order. Unreadable and missing directories yield nothing.
func executables(dir string) []candidate {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []candidate
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || name == "" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		out = append(out, candidate{name: name, path: path, info: fi})
	}
	return out
}

// described is the result of one describe call.
type described struct {
	desc Descriptor
	err  error
}

// describeAll runs describe on every candidate, a few at a time.
func describeAll(ctx context.Context, cands []candidate, env []string, timeout time.Duration) []described {
	out := make([]described, len(cands))
	sem := make(chan struct{}, describeParallelism)
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].desc, out[i].err = describe(ctx, c, env, timeout)
		})
	}
	wg.Wait()
	return out
}

// describe runs "tc-NAME describe" and decodes its descriptor.
func describe(ctx context.Context, c candidate, env []string, timeout time.Duration) (Descriptor, error) {
	if env == nil {
		env = os.Environ()
	}
	stderr := &limitedBuffer{max: 64 << 10, discard: true}
	res := execute(ctx, invocation{
		path:    c.path,
		args:    []string{HookDescribe},
		env:     cli.WithEnv(env, map[string]string{EnvPluginName: c.name, EnvStateAPI: state.APIVersion}),
		stderr:  stderr,
		timeout: timeout,
	})
	if res.err != nil {
		if last := lastLine(stderr.String()); last != "" {
			return Descriptor{}, fmt.Errorf("%w: %s", res.err, last)
		}
		return Descriptor{}, res.err
	}
	var d Descriptor
	dec := json.NewDecoder(bytes.NewReader(res.stdout))
	if err := dec.Decode(&d); err != nil {
		return Descriptor{}, fmt.Errorf("describe did not print a descriptor: %w", err)
	}
	return d, nil
}

// lastLine returns the last non-empty line of s, shortened to 200 bytes: the
// gist of what a failing plugin said, without flooding the warnings.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return last
}

// accept turns a described candidate into a Plugin, or warns why not.
func accept(c candidate, r described, warn func(string)) (Plugin, bool) {
	if r.err != nil {
		warn(fmt.Sprintf("plugin %s (%s) skipped: describe failed: %v", c.name, c.path, r.err))
		return Plugin{}, false
	}
	d := r.desc
	if d.Name != c.name {
		warn(fmt.Sprintf("plugin %s (%s) describes itself as %q; using %q from its file name", c.name, c.path, d.Name, c.name))
		d.Name = c.name
	}
	var missing []string
	for _, h := range RequiredHooks() {
		if !slices.Contains(d.Hooks, h) {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		warn(fmt.Sprintf("plugin %s (%s) skipped: it does not implement the required hook(s) %s", c.name, c.path, strings.Join(missing, ", ")))
		return Plugin{}, false
	}
	if !slices.Contains(d.StateAPIVersions, state.APIVersion) {
		warn(fmt.Sprintf("plugin %s (%s) skipped: it reads state %v but this talosc writes %s", c.name, c.path, d.StateAPIVersions, state.APIVersion))
		return Plugin{}, false
	}
	return Plugin{Descriptor: d, Path: c.path}, true
}

// warnSectionConflicts reports config sections declared by more than one
// plugin; the first in run order keeps the section (see Sections).
func warnSectionConflicts(ps []Plugin, warn func(string)) {
	owner := map[string]string{}
	for _, p := range ps {
		for _, s := range p.ConfigSections {
			if first, taken := owner[s]; taken {
				warn(fmt.Sprintf("config section %q is declared by plugins %s and %s; %s owns it", s, first, p.Name, first))
				continue
			}
			owner[s] = p.Name
		}
	}
}
