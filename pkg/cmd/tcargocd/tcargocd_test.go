package tcargocd_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// run runs tc-argocd in dir with section as the merged argocd section and
// returns the exit code, its section and stderr (stdout for describe).
func run(t *testing.T, dir string, section any, args ...string) (int, state.Section, string) {
	t.Helper()
	spec := tcargocd.Spec()
	spec.LookupEnv = func(k string) (string, bool) {
		if k == plugin.EnvSections {
			return "argocd=argocd,rancher=rancher", true
		}
		return "", false
	}
	spec.Load = func(d string, _ config.LoadOptions) (*config.Cluster, error) {
		plugins := map[string]any{}
		if section != nil {
			plugins["argocd"] = section
		}
		return &config.Cluster{Dir: d, Name: "demo", Plugins: plugins}, nil
	}
	s, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := cli.Run(plugin.NewCommand(s, spec), append(args, "-C", dir), s)
	if args[0] == "describe" {
		return code, state.Section{}, out.String()
	}
	doc, err := state.Parse(out.Bytes())
	if err != nil || doc == nil {
		t.Fatalf("stdout is not a state document (%v): %q; stderr %q", err, out, errOut)
	}
	sec, ok, err := doc.Section("argocd")
	if err != nil || !ok {
		t.Fatalf("no argocd section (%v): %q", err, out)
	}
	return code, sec, errOut.String()
}

func active() map[string]any { return map[string]any{"kubeconfig": "../argocd-kubeconfig"} }

func TestDescribe(t *testing.T) {
	t.Parallel()
	code, _, out := run(t, t.TempDir(), nil, "describe")
	var d plugin.Descriptor
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("describe: exit %d, %v: %q", code, err, out)
	}
	want := plugin.Descriptor{
		Name: "argocd", Version: d.Version, After: []string{"rancher"}, ConfigSections: []string{"argocd"},
		Hooks:            []string{"init", "validate", "configured", "converge", "destroy", "status", "check"},
		StateAPIVersions: []string{state.APIVersion},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("descriptor mismatch (-want +got):\n%s", diff)
	}
}

// TestPlanDeferredBeforeBootstrap is AR-9.
func TestPlanDeferredBeforeBootstrap(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"converge", "--dry-run"}, {"converge"}, {"destroy", "--yes"}, {"status"}, {"check"}} {
		code, sec, _ := run(t, t.TempDir(), active(), args...)
		if code != 0 || sec.Status != state.StatusDeferred || !cmp.Equal(sec.Messages, []string{tcargocd.NeedsKubeconfig}) {
			t.Errorf("%v: exit %d, section %+v", args, code, sec)
		}
	}
}

func TestNotImplementedOnceBootstrapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, sec, stderr := run(t, dir, active(), "converge")
	if code != 1 || sec.Status != state.StatusFailed || !strings.Contains(stderr, tcargocd.NotImplemented) {
		t.Errorf("converge: exit %d, section %+v, stderr %q", code, sec, stderr)
	}
	code, sec, _ = run(t, dir, active(), "check")
	if code != 0 || string(sec.Outputs) != `{"ok":false,"reason":"`+tcargocd.NotImplemented+`"}` {
		t.Errorf("check: exit %d, outputs %s", code, sec.Outputs)
	}
}

// TestURLTokenAloneDoesNotActivate is AR-1.
func TestURLTokenAloneDoesNotActivate(t *testing.T) {
	t.Parallel()
	code, sec, _ := run(t, t.TempDir(), map[string]any{"url": "https://argocd", "token": "t"}, "converge")
	if code != 0 || sec.Status != state.StatusSkipped {
		t.Errorf("exit %d, section %+v", code, sec)
	}
	code, sec, _ = run(t, t.TempDir(), map[string]any{"url": "https://argocd", "token": "t"}, "configured")
	if code != 0 || string(sec.Outputs) != `{"configured":false}` {
		t.Errorf("configured: exit %d, outputs %s", code, sec.Outputs)
	}
}

// TestConvergeValidatesFirst: a lone git URL is refused even though the
// plugin is not configured, before anything else.
func TestConvergeValidatesFirst(t *testing.T) {
	t.Parallel()
	code, sec, _ := run(t, t.TempDir(), map[string]any{"git": map[string]any{"url": "https://git"}}, "converge", "--dry-run")
	if code != 2 || sec.Error == nil || len(sec.Error.Problems) != 1 || !strings.HasPrefix(sec.Error.Problems[0], "argocd.infra.url: must be set together") {
		t.Errorf("exit %d, section %+v", code, sec)
	}
}

func TestInitScaffolds(t *testing.T) {
	t.Parallel()
	code, sec, _ := run(t, t.TempDir(), nil, "init")
	var out struct{ Sections []plugin.InitSection }
	if err := json.Unmarshal(sec.Outputs, &out); err != nil || code != 0 {
		t.Fatalf("init: exit %d, %v", code, err)
	}
	want := []plugin.InitSection{
		{Name: "argocd", File: "cluster.yaml", YAML: tcargocd.ClusterScaffold},
		{Name: "argocd", File: "secrets.yaml", YAML: tcargocd.SecretsScaffold},
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
		v, ok := doc["argocd"]
		if !ok || len(doc) != 1 {
			t.Errorf("%s snippet keys = %v, want only argocd", s.File, doc)
		}
		if s.File == "secrets.yaml" && v != nil {
			t.Errorf("secrets snippet value = %v, want null (credentials commented out)", v)
		}
		if m, isMap := v.(map[string]any); isMap {
			maps.Copy(merged, m)
		}
	}
	if p := tcargocd.Validate(merged); len(p) != 0 {
		t.Errorf("scaffold is invalid: %v", p)
	}
	if tcargocd.Configured(merged) {
		t.Error("the scaffold activates the plugin")
	}
}
