// Package plugintest runs a plugin built with the plugin SDK in-process, with
// a fake configuration loader, and holds the checks every bundled plugin's
// tests make: its descriptor, its init scaffold, its deferral before the
// first bootstrap and table tests of its section's Validate and Configured
// functions.
package plugintest

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// Harness runs one plugin's hooks in-process. The plugin's configuration
// section is named after it (Spec.Descriptor.Name).
type Harness struct {
	// Spec is the plugin's SDK specification; Run replaces its Load and
	// LookupEnv.
	Spec plugin.Spec
	// Sections is TALOSC_PLUGIN_SECTIONS as the front door would set it, such
	// as "rancher=rancher".
	Sections string
	// Config, when set, is the configuration Run loads (a copy, with Dir
	// and the plugin's section set by Run); nil: a cluster "demo".
	Config *config.Cluster
	// State, when set, is the document on stdin (earlier phases' and
	// plugins' sections); nil: an empty stdin.
	State *state.Document
}

// name is the plugin name and its section.
func (h Harness) name() string { return h.Spec.Descriptor.Name }

// Run runs the plugin with args (a hook and its flags, or "describe") in dir,
// loading a cluster "demo" whose merged plugin section is section (nil:
// absent). It returns the exit code, the plugin's section of the document on
// stdout and stderr; for describe, the section is empty and the string is
// stdout. A run that writes no document with the section fails the test.
func (h Harness) Run(t *testing.T, dir string, section any, args ...string) (int, state.Section, string) {
	t.Helper()
	name, spec := h.name(), h.Spec
	spec.LookupEnv = func(k string) (string, bool) {
		if k == plugin.EnvSections {
			return h.Sections, true
		}
		return "", false
	}
	spec.Load = func(d string, _ config.LoadOptions) (*config.Cluster, error) {
		cfg := config.Cluster{Name: "demo"}
		if h.Config != nil {
			cfg = *h.Config
		}
		cfg.Dir, cfg.Plugins = d, maps.Clone(cfg.Plugins)
		if cfg.Plugins == nil {
			cfg.Plugins = map[string]any{}
		}
		if section != nil {
			cfg.Plugins[name] = section
		}
		return &cfg, nil
	}
	s, in, out, errOut := genericiooptions.NewTestIOStreams()
	if h.State != nil {
		if err := state.Write(in, h.State); err != nil {
			t.Fatal(err)
		}
	}
	code := cli.Run(plugin.NewCommand(s, spec), append(args, "-C", dir), s)
	if len(args) > 0 && args[0] == plugin.HookDescribe {
		return code, state.Section{}, out.String()
	}
	doc, err := state.Parse(out.Bytes())
	if err != nil || doc == nil {
		t.Fatalf("stdout is not a state document (%v): %q; stderr %q", err, out, errOut)
	}
	sec, ok, err := doc.Section(name)
	if err != nil || !ok {
		t.Fatalf("no %s section (%v): %q", name, err, out)
	}
	return code, sec, errOut.String()
}

// CheckDescribe runs describe and compares the descriptor with want. The
// version must not be empty; want.Version empty accepts any.
func (h Harness) CheckDescribe(t *testing.T, want plugin.Descriptor) {
	t.Helper()
	code, _, out := h.Run(t, t.TempDir(), nil, plugin.HookDescribe)
	var d plugin.Descriptor
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("describe: exit %d, %v: %q", code, err, out)
	}
	if want.Version == "" {
		want.Version = d.Version
	}
	if diff := cmp.Diff(want, d); diff != "" || d.Version == "" {
		t.Errorf("descriptor mismatch (-want +got):\n%s", diff)
	}
}

// CheckInit runs init and checks that it offers want, and that what it
// writes is valid, has only the plugin's top-level key, holds null in
// secrets.yaml (credentials commented out) and activates nothing: validate
// finds no problem in the merged snippets and configured is false.
func (h Harness) CheckInit(t *testing.T, want []plugin.InitSection, validate func(any) []string, configured func(any) bool) {
	t.Helper()
	name := h.name()
	code, sec, _ := h.Run(t, t.TempDir(), nil, plugin.HookInit)
	var out struct{ Sections []plugin.InitSection }
	if err := json.Unmarshal(sec.Outputs, &out); err != nil || code != 0 {
		t.Fatalf("init: exit %d, %v", code, err)
	}
	if diff := cmp.Diff(want, out.Sections); diff != "" {
		t.Errorf("sections mismatch (-want +got):\n%s", diff)
	}
	merged := map[string]any{}
	for _, s := range out.Sections {
		var doc map[string]any
		if err := yaml.NewDecoder(bytes.NewReader([]byte(s.YAML))).Decode(&doc); err != nil {
			t.Fatalf("%s snippet: %v", s.File, err)
		}
		v, ok := doc[name]
		if !ok || len(doc) != 1 {
			t.Errorf("%s snippet keys = %v, want only %s", s.File, doc, name)
		}
		if s.File == config.SecretsFile && v != nil {
			t.Errorf("secrets snippet value = %v, want null (credentials commented out)", v)
		}
		if m, isMap := v.(map[string]any); isMap {
			maps.Copy(merged, m)
		}
	}
	if p := validate(merged); len(p) != 0 {
		t.Errorf("scaffold is invalid: %v", p)
	}
	if configured(merged) {
		t.Error("the scaffold activates the plugin")
	}
}

// CheckDeferred checks that, before the cluster has a kubeconfig, converge
// (and plan), destroy, status and check of a plugin configured by section
// exit 0 with the section deferred for needsKubeconfig.
func (h Harness) CheckDeferred(t *testing.T, section any, needsKubeconfig string) {
	t.Helper()
	for _, args := range [][]string{{"converge"}, {"converge", "--dry-run"}, {"destroy", "--yes"}, {"status"}, {"check"}} {
		code, sec, _ := h.Run(t, t.TempDir(), section, args...)
		if code != 0 || sec.Status != state.StatusDeferred || !cmp.Equal(sec.Messages, []string{needsKubeconfig}) {
			t.Errorf("%v: exit %d, section %+v", args, code, sec)
		}
	}
}

// Bootstrapped returns a new cluster directory holding a kubeconfig, as after
// the first bootstrap.
func Bootstrapped(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.KubeconfigFile), []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ValidateCase is one row of a table test of a section's Validate function:
// a name, the section and the problems wanted. It is an alias of an unnamed
// struct so that rows stay positional ({"absent", nil, nil}) without go vet's
// complaint about unkeyed fields of another package's struct.
type ValidateCase = struct {
	Name    string
	Section any
	Want    []string
}

// RunValidate runs each case as a parallel subtest comparing
// validate(Section) with Want. It checks first what every plugin's Validate
// must do (plugin.Hooks): an absent section (nil) has no problem.
func RunValidate(t *testing.T, validate func(any) []string, cases []ValidateCase) {
	t.Helper()
	for _, tt := range append([]ValidateCase{{Name: "absent", Section: nil, Want: nil}}, cases...) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.Want, validate(tt.Section)); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// ConfiguredCase is one row of a table test of a section's Configured
// function: a name, the section and the answer wanted. Like ValidateCase it
// is an alias, so rows stay positional.
type ConfiguredCase = struct {
	Name    string
	Section any
	Want    bool
}

// RunConfigured checks configured(Section) against Want for each case. It
// checks first what holds for every plugin configured by a mapping: an absent
// section and one that is not a mapping do not configure it.
func RunConfigured(t *testing.T, configured func(any) bool, cases []ConfiguredCase) {
	t.Helper()
	universal := []ConfiguredCase{
		{Name: "absent", Section: nil, Want: false},
		{Name: "not a mapping", Section: "yes", Want: false},
	}
	for _, tt := range append(universal, cases...) {
		if got := configured(tt.Section); got != tt.Want {
			t.Errorf("%s: Configured() = %t, want %t", tt.Name, got, tt.Want)
		}
	}
}
