package plugin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
)

// warnings collects Discover's warnings.
type warnings []string

func (w *warnings) add(m string) { *w = append(*w, m) }

func (w warnings) has(t *testing.T, substrings ...string) {
	t.Helper()
	for _, m := range w {
		ok := true
		for _, s := range substrings {
			ok = ok && strings.Contains(m, s)
		}
		if ok {
			return
		}
	}
	t.Errorf("no warning contains all of %q; warnings:\n%s", substrings, strings.Join(w, "\n"))
}

func discover(t *testing.T, o plugin.DiscoverOptions) ([]plugin.Plugin, warnings) {
	t.Helper()
	var w warnings
	o.Warn = w.add
	if o.Exclude == nil {
		o.Exclude = plugin.Builtins()
	}
	ps, err := plugin.Discover(t.Context(), o)
	if err != nil {
		t.Fatalf("Discover() error = %v", err)
	}
	return ps, w
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	first, second := t.TempDir(), t.TempDir()
	ok := func(name string, after ...string) string {
		return describeScript(descriptorJSON(t, name, after...), "exit 0")
	}
	writeFile(t, filepath.Join(first, "tc-argocd"), ok("argocd", "rancher"), 0o755)
	writeFile(t, filepath.Join(first, "tc-rancher"), ok("rancher"), 0o755)
	writeFile(t, filepath.Join(second, "tc-rancher"), ok("rancher"), 0o755) // shadowed
	writeFile(t, filepath.Join(second, "tc-charts"), ok("charts"), 0o755)
	writeFile(t, filepath.Join(second, "tc-noexec"), ok("noexec"), 0o644)
	if err := os.Mkdir(filepath.Join(second, "tc-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(second, "tc-crash"), "#!/bin/sh\necho boom >&2\nexit 3\n", 0o755)
	writeFile(t, filepath.Join(second, "tc-badjson"), "#!/bin/sh\necho not json\n", 0o755)
	writeFile(t, filepath.Join(second, "tc-list"), ok("list"), 0o755)
	writeFile(t, filepath.Join(second, "tc-net"), "#!/bin/sh\necho should not run >&2\nexit 1\n", 0o755) // builtin
	writeFile(t, filepath.Join(second, "tc-alias"), ok("somethingelse"), 0o755)
	writeFile(t, filepath.Join(second, "tc-nohooks"), describeScript(
		`{"name":"nohooks","version":"1","hooks":["converge"],"stateAPIVersions":["talosc.dev/v1alpha1"]}`, "exit 0"), 0o755)
	writeFile(t, filepath.Join(second, "tc-oldstate"), describeScript(
		`{"name":"oldstate","version":"1","hooks":["configured","converge"],"stateAPIVersions":["talosc.dev/v0"]}`, "exit 0"), 0o755)
	writeFile(t, filepath.Join(second, "tc-Bad.sh"), ok("bad"), 0o755)
	writeFile(t, filepath.Join(second, "other"), ok("other"), 0o755)

	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: pathList(first, filepath.Join(first, "missing"), second, first)})

	if diff := cmp.Diff([]string{"alias", "charts", "rancher", "argocd"}, names(ps)); diff != "" {
		t.Errorf("plugins (run order) mismatch (-want +got):\n%s", diff)
	}
	for _, pl := range ps {
		if pl.Name == "rancher" && pl.Path != filepath.Join(first, "tc-rancher") {
			t.Errorf("rancher path = %s, want the first on PATH", pl.Path)
		}
		if pl.Name == "argocd" && !cmp.Equal(pl.After, []string{"rancher"}) {
			t.Errorf("argocd after = %v", pl.After)
		}
	}
	w.has(t, "plugin rancher", filepath.Join(second, "tc-rancher"), filepath.Join(first, "tc-rancher"), "only the first")
	w.has(t, "plugin crash", "skipped", "describe failed", "exit status 3", "boom")
	w.has(t, "plugin badjson", "skipped", "did not print a descriptor")
	w.has(t, filepath.Join(second, "tc-list"), "reserved")
	w.has(t, "plugin alias", `"somethingelse"`, `using "alias"`)
	w.has(t, "plugin nohooks", "skipped", "configured")
	w.has(t, "plugin oldstate", "skipped", "talosc.dev/v0")
	w.has(t, "tc-Bad.sh", "lowercase")
	for _, m := range w {
		if strings.Contains(m, "noexec") || strings.Contains(m, "tc-dir") || strings.Contains(m, "tc-net") || strings.Contains(m, "other") {
			t.Errorf("unexpected warning %q", m)
		}
	}
	if len(w) != 8 {
		t.Errorf("got %d warnings, want 8:\n%s", len(w), strings.Join(w, "\n"))
	}
}

// TestDiscoverRefusesRelativePathEntries changes the working directory, so it
// cannot run in parallel.
func TestDiscoverRefusesRelativePathEntries(t *testing.T) {
	cwd := t.TempDir()
	abs := t.TempDir()
	t.Chdir(cwd)
	ok := func(name string) string { return describeScript(descriptorJSON(t, name), "exit 0") }
	writeFile(t, filepath.Join(cwd, "tc-dot"), ok("dot"), 0o755)
	writeFile(t, filepath.Join(cwd, "bin", "tc-rel"), ok("rel"), 0o755)
	writeFile(t, filepath.Join(cwd, "tc-net"), ok("net"), 0o755) // a builtin: not even mentioned
	writeFile(t, filepath.Join(abs, "tc-abs"), ok("abs"), 0o755)
	writeFile(t, filepath.Join(abs, "tc-dot"), ok("dot"), 0o755)

	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: pathList(".", "bin", "", abs)})

	if diff := cmp.Diff([]string{"abs", "dot"}, names(ps)); diff != "" {
		t.Errorf("plugins mismatch (-want +got):\n%s", diff)
	}
	for _, pl := range ps {
		if !filepath.IsAbs(pl.Path) || !strings.HasPrefix(pl.Path, abs) {
			t.Errorf("plugin %s found at %s, want under %s", pl.Name, pl.Path, abs)
		}
	}
	w.has(t, filepath.Join(".", "tc-dot"), "relative PATH entry .")
	w.has(t, filepath.Join("bin", "tc-rel"), "relative PATH entry bin")
	w.has(t, "tc-dot", "relative PATH entry (empty)")
	for _, m := range w {
		if strings.Contains(m, "tc-net") {
			t.Errorf("builtin mentioned: %q", m)
		}
	}
}

func TestDiscoverDescribeTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tc-slow"), "#!/bin/sh\nsleep 30\n", 0o755)
	writeFile(t, filepath.Join(dir, "tc-fast"), describeScript(descriptorJSON(t, "fast"), "exit 0"), 0o755)
	start := time.Now()
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: dir, Timeout: 300 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Discover took %s with a hanging describe", elapsed)
	}
	if diff := cmp.Diff([]string{"fast"}, names(ps)); diff != "" {
		t.Errorf("plugins mismatch (-want +got):\n%s", diff)
	}
	w.has(t, "plugin slow", "skipped", "timed out")
}

func TestDiscoverTimeoutFromEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tc-slow"), "#!/bin/sh\nsleep 30\n", 0o755)
	start := time.Now()
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: dir, Env: append(os.Environ(), plugin.EnvTimeout+"=300ms")})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Discover took %s; %s was not honoured", elapsed, plugin.EnvTimeout)
	}
	if len(ps) != 0 {
		t.Errorf("plugins = %v, want none", names(ps))
	}
	w.has(t, "plugin slow", "timed out after 300ms")
}

func TestDiscoverDescribeEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The plugin names itself from the environment Discover gives it.
	writeFile(t, filepath.Join(dir, "tc-envy"), `#!/bin/sh
printf '{"name":"%s","version":"%s","hooks":["configured","converge"],"stateAPIVersions":["%s"]}\n' "$TALOSC_PLUGIN_NAME" "$CUSTOM" "$TALOSC_STATE_API"
`, 0o755)
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: dir, Env: []string{"CUSTOM=7", "PATH=" + os.Getenv("PATH")}})
	if len(ps) != 1 || ps[0].Name != "envy" || ps[0].Version != "7" {
		t.Errorf("plugins = %+v, warnings %q", ps, w)
	}
}

func TestDiscoverSectionConflict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tc-a"), describeScript(
		`{"name":"a","version":"1","configSections":["shared"],"hooks":["configured","converge"],"stateAPIVersions":["talosc.dev/v1alpha1"]}`, ""), 0o755)
	writeFile(t, filepath.Join(dir, "tc-b"), describeScript(
		`{"name":"b","version":"1","configSections":["shared"],"hooks":["configured","converge"],"stateAPIVersions":["talosc.dev/v1alpha1"]}`, ""), 0o755)
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: dir})
	if got := plugin.SectionsEnv(ps); got != "shared=a" {
		t.Errorf("SectionsEnv() = %q, want %q", got, "shared=a")
	}
	w.has(t, `config section "shared"`, "plugins a and b", "a owns it")
}

func TestConfigSections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tc-rancher"), describeScript(descriptorJSON(t, "rancher"), ""), 0o755)
	env := map[string]string{"PATH": dir}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	got, err := plugin.ConfigSections(t.Context(), lookup, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"rancher": "rancher"}, got); diff != "" {
		t.Errorf("ConfigSections() from PATH mismatch (-want +got):\n%s", diff)
	}
	env[plugin.EnvSections] = "argocd=argocd"
	got, err = plugin.ConfigSections(t.Context(), lookup, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"argocd": "argocd"}, got); diff != "" {
		t.Errorf("ConfigSections() from %s mismatch (-want +got):\n%s", plugin.EnvSections, diff)
	}
}

// TestDiscoverSameDirectoryTwice: merged-/usr systems list /bin and /usr/bin,
// one directory; a plugin symlinked into a second directory is the same file.
func TestDiscoverSameDirectoryTwice(t *testing.T) {
	t.Parallel()
	real, other := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(real, "tc-a"), describeScript(descriptorJSON(t, "a"), ""), 0o755)
	link := filepath.Join(t.TempDir(), "bin")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "tc-a"), filepath.Join(other, "tc-a")); err != nil {
		t.Fatal(err)
	}
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: pathList(real, link, other)})
	if diff := cmp.Diff([]string{"a"}, names(ps)); diff != "" || len(w) != 0 {
		t.Errorf("plugins %v (-want +got):\n%s\nwarnings %q", names(ps), diff, w)
	}
}

func TestDiscoverBesideTheBinary(t *testing.T) {
	t.Parallel()
	path, beside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(path, "tc-a"), describeScript(descriptorJSON(t, "a"), ""), 0o755)
	writeFile(t, filepath.Join(beside, "tc-a"), describeScript(descriptorJSON(t, "a"), ""), 0o755)
	writeFile(t, filepath.Join(beside, "tc-b"), describeScript(descriptorJSON(t, "b"), ""), 0o755)
	ps, w := discover(t, plugin.DiscoverOptions{PathEnv: path, Beside: beside})
	if diff := cmp.Diff([]string{"a", "b"}, names(ps)); diff != "" {
		t.Fatalf("plugins (-want +got):\n%s", diff)
	}
	if ps[0].Path != filepath.Join(path, "tc-a") {
		t.Errorf("tc-a from %s; PATH must win over the binary's directory", ps[0].Path)
	}
	w.has(t, "shadowed")
}
