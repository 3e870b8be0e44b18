package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// sdkRun is one run of a plugin binary built with the SDK.
type sdkRun struct {
	code   int
	stdout *bytes.Buffer
	stderr *bytes.Buffer
	loads  []config.LoadOptions
	dirs   []string
}

// doc decodes stdout.
func (r sdkRun) doc(t *testing.T) *state.Document {
	t.Helper()
	d, err := state.Parse(r.stdout.Bytes())
	if err != nil || d == nil {
		t.Fatalf("stdout is not a state document (%v): %q", err, r.stdout.String())
	}
	return d
}

// section decodes the fake plugin's section from stdout.
func (r sdkRun) section(t *testing.T) state.Section {
	t.Helper()
	return mustSection(t, r.doc(t), "fake")
}

// sdkEnv is the environment of an SDK test: no front door, sections given.
func sdkEnv(extra map[string]string) func(string) (string, bool) {
	env := map[string]string{plugin.EnvSections: "other=otherplugin"}
	maps.Copy(env, extra)
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// runSDK runs spec with args and stdin; load returns cfg (or err).
func runSDK(t *testing.T, spec plugin.Spec, stdin string, cfg *config.Cluster, loadErr error, args ...string) sdkRun {
	t.Helper()
	s, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	r := sdkRun{stdout: out, stderr: errOut}
	spec.Load = func(dir string, o config.LoadOptions) (*config.Cluster, error) {
		r.loads = append(r.loads, o)
		r.dirs = append(r.dirs, dir)
		return cfg, loadErr
	}
	if spec.LookupEnv == nil {
		spec.LookupEnv = sdkEnv(nil)
	}
	r.code = cli.Run(plugin.NewCommand(s, spec), args, s)
	return r
}

// fakeSpec is a plugin "fake" owning section "fake": configured when the
// section has on: true; converge publishes what it saw.
func fakeSpec() plugin.Spec {
	return plugin.Spec{
		Descriptor: plugin.Descriptor{Name: "fake", Version: "1.2.3", After: []string{"rancher"}, ConfigSections: []string{"fake", "fake2"}},
		Hooks: plugin.Hooks{
			Init: func(context.Context, *plugin.Context) ([]plugin.InitSection, error) {
				return []plugin.InitSection{{Name: "fake", File: "cluster.yaml", YAML: "fake:\n  on: false\n"}}, nil
			},
			Validate: func(_ context.Context, c *plugin.Context) []string {
				if m, ok := c.Section["fake"].(map[string]any); ok && m["bad"] != nil {
					return []string{"fake.bad: unknown key", "fake.on: must be true or false"}
				}
				return nil
			},
			Configured: func(_ context.Context, c *plugin.Context) (bool, error) {
				m, _ := c.Section["fake"].(map[string]any)
				return m["on"] == true, nil
			},
			Converge: func(_ context.Context, c *plugin.Context) (plugin.Result, error) {
				earlier, _, _ := c.State.Section("rancher")
				return plugin.Result{
					Outputs:  map[string]any{"dir": c.Dir, "dryRun": c.DryRun, "yes": c.Yes, "rancher": string(earlier.Outputs), "kubeconfig": c.Kubeconfig},
					Messages: []string{"converged"},
				}, nil
			},
			Check: func(_ context.Context, c *plugin.Context) (map[string]any, error) {
				return map[string]any{"ok": true, "cluster": c.Config.Name}, nil
			},
		},
	}
}

func fakeConfig(dir string, section any) *config.Cluster {
	plugins := map[string]any{"other": "x"}
	if section != nil {
		plugins["fake"] = section
	}
	return &config.Cluster{Dir: dir, Name: "demo", Plugins: plugins}
}

func TestSDKDescribe(t *testing.T) {
	t.Parallel()
	r := runSDK(t, fakeSpec(), "", nil, errors.New("describe must not load"), "describe")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(r.stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "fake", "version": "1.2.3", "after": []any{"rancher"}, "configSections": []any{"fake", "fake2"},
		"hooks":            []any{"init", "validate", "configured", "converge", "check"},
		"stateAPIVersions": []any{state.APIVersion},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("descriptor mismatch (-want +got):\n%s", diff)
	}
	if len(r.loads) != 0 {
		t.Error("describe loaded the configuration")
	}
}

func TestSDKConverge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := doc(t, map[string]string{"rancher": `{"status":"succeeded","producer":"tc-rancher","outputs":{"cluster_id":"c-1"}}`})
	var stdin bytes.Buffer
	if err := state.Write(&stdin, in); err != nil {
		t.Fatal(err)
	}
	r := runSDK(t, fakeSpec(), stdin.String(), fakeConfig(dir, map[string]any{"on": true}), nil, "converge", "-C", dir, "--yes")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	out := r.doc(t)
	if changed := state.ChangedOtherThan(in, out, "fake"); len(changed) != 0 {
		t.Errorf("changed sections besides fake: %v", changed)
	}
	sec := mustSection(t, out, "fake")
	if sec.Status != state.StatusSucceeded || sec.Producer != "tc-fake/1.2.3" || !cmp.Equal(sec.Messages, []string{"converged"}) {
		t.Errorf("section = %+v", sec)
	}
	var outputs map[string]any
	if err := json.Unmarshal(sec.Outputs, &outputs); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"dir": dir, "dryRun": false, "yes": true, "rancher": `{"cluster_id":"c-1"}`, "kubeconfig": filepath.Join(dir, "kubeconfig")}
	if diff := cmp.Diff(want, outputs); diff != "" {
		t.Errorf("outputs mismatch (-want +got):\n%s", diff)
	}
	wantLoad := config.LoadOptions{PluginSections: map[string]string{"other": "otherplugin", "fake": "fake", "fake2": "fake"}}
	if diff := cmp.Diff([]config.LoadOptions{wantLoad}, r.loads); diff != "" {
		t.Errorf("load options mismatch (-want +got):\n%s", diff)
	}
	if !cmp.Equal(r.dirs, []string{dir}) {
		t.Errorf("loaded %v, want %s", r.dirs, dir)
	}
}

func TestSDKPlanStartsANewDocument(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := fakeSpec()
	spec.LookupEnv = sdkEnv(map[string]string{plugin.EnvDir: dir, plugin.EnvKubeconf: "/elsewhere/kubeconfig"})
	r := runSDK(t, spec, "", fakeConfig(dir, map[string]any{"on": true}), nil, "converge", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	d := r.doc(t)
	if d.Cluster != "demo" || d.Action != "plan" {
		t.Errorf("new document cluster %q action %q, want demo and plan", d.Cluster, d.Action)
	}
	sec := mustSection(t, d, "fake")
	if sec.Status != state.StatusPlanned || !strings.Contains(string(sec.Outputs), `"kubeconfig":"/elsewhere/kubeconfig"`) {
		t.Errorf("section = %+v", sec)
	}
	if !cmp.Equal(r.dirs, []string{dir}) {
		t.Errorf("loaded %v, want %s from %s", r.dirs, dir, plugin.EnvDir)
	}
}

func TestSDKNotConfigured(t *testing.T) {
	t.Parallel()
	for _, hook := range []string{"converge", "check"} {
		r := runSDK(t, fakeSpec(), "", fakeConfig("/c", nil), nil, hook)
		if r.code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", hook, r.code, r.stderr)
		}
		sec := r.section(t)
		if sec.Status != state.StatusSkipped || !cmp.Equal(sec.Messages, []string{"not configured; nothing to do"}) {
			t.Errorf("%s: section = %+v", hook, sec)
		}
		if !strings.Contains(r.stderr.String(), "fake: not configured; nothing to do") {
			t.Errorf("%s: stderr = %q", hook, r.stderr)
		}
	}
}

func TestSDKValidate(t *testing.T) {
	t.Parallel()
	r := runSDK(t, fakeSpec(), "", fakeConfig("/c", map[string]any{"on": true}), nil, "validate")
	if r.code != 0 || r.section(t).Status != state.StatusSucceeded {
		t.Errorf("valid: exit %d, section %+v, stderr %q", r.code, r.section(t), r.stderr)
	}
	// Refused even though the plugin is not configured, and before converge.
	for _, hook := range []string{"validate", "converge"} {
		r = runSDK(t, fakeSpec(), "", fakeConfig("/c", map[string]any{"bad": 1}), nil, hook)
		if r.code != cli.ExitUsage {
			t.Errorf("%s: exit %d, want 2", hook, r.code)
		}
		sec := r.section(t)
		want := &state.Error{Message: "invalid fake configuration", Problems: []string{"fake.bad: unknown key", "fake.on: must be true or false"}}
		if sec.Status != state.StatusFailed || !cmp.Equal(sec.Error, want) {
			t.Errorf("%s: section = %+v, error %+v", hook, sec, sec.Error)
		}
		if !strings.Contains(r.stderr.String(), "ERROR: invalid fake configuration: fake.bad: unknown key; fake.on") {
			t.Errorf("%s: stderr = %q", hook, r.stderr)
		}
	}
}

func TestSDKConfigLoadFailure(t *testing.T) {
	t.Parallel()
	problems := config.Problems{{File: "cluster.yaml", Path: "fakee", Message: "unknown key"}}
	for _, err := range []error{problems, &problems, errors.New("cluster.yaml: could not parse")} {
		r := runSDK(t, fakeSpec(), "", nil, err, "configured")
		if r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want 2", err, r.code)
		}
		sec := r.section(t)
		if sec.Status != state.StatusFailed || sec.Error == nil || len(sec.Error.Problems) != 1 {
			t.Fatalf("%v: section = %+v", err, sec)
		}
		if p := sec.Error.Problems[0]; !strings.Contains(p, "cluster.yaml") {
			t.Errorf("%v: problem %q does not name the file", err, p)
		}
	}
}

func TestSDKConfiguredAndInit(t *testing.T) {
	t.Parallel()
	r := runSDK(t, fakeSpec(), "", fakeConfig("/c", map[string]any{"on": true}), nil, "configured")
	if got := string(r.section(t).Outputs); r.code != 0 || got != `{"configured":true}` {
		t.Errorf("configured: exit %d, outputs %s", r.code, got)
	}
	r = runSDK(t, fakeSpec(), "", nil, errors.New("init must not load"), "init")
	if r.code != 0 {
		t.Fatalf("init: exit %d, stderr %q", r.code, r.stderr)
	}
	want := `{"sections":[{"name":"fake","file":"cluster.yaml","yaml":"fake:\n  on: false\n"}]}`
	if got := string(r.section(t).Outputs); got != want {
		t.Errorf("init outputs = %s, want %s", got, want)
	}
}

func TestSDKHookResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		converge   func(context.Context, *plugin.Context) (plugin.Result, error)
		check      func(context.Context, *plugin.Context) (map[string]any, error)
		hook       string
		wantCode   int
		wantStatus state.Status
		wantOut    string
		wantMsg    string
	}{
		{
			name: "deferred result", hook: "converge",
			converge: func(context.Context, *plugin.Context) (plugin.Result, error) {
				return plugin.Result{Status: state.StatusDeferred, Messages: []string{"needs kubeconfig"}}, nil
			},
			wantStatus: state.StatusDeferred, wantMsg: "needs kubeconfig",
		},
		{
			name: "deferred error", hook: "converge",
			converge: func(context.Context, *plugin.Context) (plugin.Result, error) {
				return plugin.Result{}, plugin.Defer("needs kubeconfig")
			},
			wantStatus: state.StatusDeferred, wantMsg: "needs kubeconfig",
		},
		{
			name: "error keeps partial outputs", hook: "converge",
			converge: func(context.Context, *plugin.Context) (plugin.Result, error) {
				return plugin.Result{Outputs: map[string]int{"created": 1}}, errors.New("api said no")
			},
			wantCode: 1, wantStatus: state.StatusFailed, wantOut: `{"created":1}`, wantMsg: "api said no",
		},
		{
			name: "failed status", hook: "converge",
			converge: func(context.Context, *plugin.Context) (plugin.Result, error) {
				return plugin.Result{Status: state.StatusFailed, Messages: []string{"half done"}}, nil
			},
			wantCode: 1, wantStatus: state.StatusFailed, wantMsg: "half done",
		},
		{
			name: "check deferred", hook: "check",
			check: func(context.Context, *plugin.Context) (map[string]any, error) {
				return nil, plugin.Defer("needs kubeconfig")
			},
			wantStatus: state.StatusDeferred, wantOut: `{"deferred":true,"ok":false,"reason":"needs kubeconfig"}`,
		},
		{
			name: "check error", hook: "check",
			check: func(context.Context, *plugin.Context) (map[string]any, error) {
				return nil, errors.New("unreachable")
			},
			wantCode: 1, wantStatus: state.StatusFailed, wantOut: `{"error":"unreachable","ok":false}`, wantMsg: "unreachable",
		},
		{
			name: "check without ok", hook: "check",
			check: func(context.Context, *plugin.Context) (map[string]any, error) {
				return map[string]any{"ok": "yes"}, nil
			},
			wantCode: 1, wantStatus: state.StatusFailed, wantMsg: `no boolean "ok"`,
		},
		{
			name: "check not ok still exits 0", hook: "check",
			check: func(context.Context, *plugin.Context) (map[string]any, error) {
				return map[string]any{"ok": false, "drift": []string{"x"}}, nil
			},
			wantStatus: state.StatusSucceeded, wantOut: `{"drift":["x"],"ok":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := fakeSpec()
			if tt.converge != nil {
				spec.Hooks.Converge = tt.converge
			}
			if tt.check != nil {
				spec.Hooks.Check = tt.check
			}
			r := runSDK(t, spec, "", fakeConfig("/c", map[string]any{"on": true}), nil, tt.hook)
			sec := r.section(t)
			if r.code != tt.wantCode || sec.Status != tt.wantStatus {
				t.Errorf("exit %d status %s, want %d %s (stderr %q)", r.code, sec.Status, tt.wantCode, tt.wantStatus, r.stderr)
			}
			if tt.wantOut != "" && string(sec.Outputs) != tt.wantOut {
				t.Errorf("outputs = %s, want %s", sec.Outputs, tt.wantOut)
			}
			all := strings.Join(sec.Messages, "\n")
			if sec.Error != nil {
				all += "\n" + sec.Error.Message
			}
			if !strings.Contains(all, tt.wantMsg) {
				t.Errorf("messages/error %q do not contain %q", all, tt.wantMsg)
			}
		})
	}
}

func TestSDKRefusesAnotherClustersState(t *testing.T) {
	t.Parallel()
	other := state.New("other", "converge")
	var stdin bytes.Buffer
	if err := state.Write(&stdin, other); err != nil {
		t.Fatal(err)
	}
	r := runSDK(t, fakeSpec(), stdin.String(), fakeConfig("/c", map[string]any{"on": true}), nil, "converge")
	if r.code != cli.ExitUsage || r.section(t).Status != state.StatusFailed {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSDKBadStdin(t *testing.T) {
	t.Parallel()
	r := runSDK(t, fakeSpec(), "{garbage", fakeConfig("/c", nil), nil, "converge")
	if r.code != cli.ExitUsage || r.stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q; want 2 and nothing on stdout", r.code, r.stdout)
	}
}

func TestSDKUnimplementedHookIsNotOffered(t *testing.T) {
	t.Parallel()
	r := runSDK(t, fakeSpec(), "", fakeConfig("/c", nil), nil, "destroy")
	if r.code != cli.ExitUsage {
		t.Errorf("exit %d, want 2 for an unknown subcommand", r.code)
	}
}

func TestContextBootstrapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &plugin.Context{Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if c.Bootstrapped() {
		t.Error("Bootstrapped() with no kubeconfig")
	}
	writeFile(t, c.Kubeconfig, "", 0o600)
	if c.Bootstrapped() {
		t.Error("Bootstrapped() with an empty kubeconfig")
	}
	if err := os.WriteFile(c.Kubeconfig, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !c.Bootstrapped() {
		t.Error("Bootstrapped() = false with a kubeconfig")
	}
}
