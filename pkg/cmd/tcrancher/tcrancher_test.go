package tcrancher_test

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
	"github.com/talosc/talosc/pkg/cmd/tcrancher"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// run runs tc-rancher in dir with section as the merged rancher section.
func run(t *testing.T, dir string, section any, args ...string) (int, state.Section, string) {
	t.Helper()
	spec := tcrancher.Spec()
	spec.LookupEnv = func(k string) (string, bool) {
		if k == plugin.EnvSections {
			return "rancher=rancher", true
		}
		return "", false
	}
	spec.Load = func(d string, _ config.LoadOptions) (*config.Cluster, error) {
		plugins := map[string]any{}
		if section != nil {
			plugins["rancher"] = section
		}
		return &config.Cluster{Dir: d, Name: "demo", Plugins: plugins}, nil
	}
	s, _, out, errOut := genericiooptions.NewTestIOStreams()
	code := cli.Run(plugin.NewCommand(s, spec), append(args, "-C", dir), s)
	if len(args) > 0 && args[0] == "describe" {
		return code, state.Section{}, out.String()
	}
	doc, err := state.Parse(out.Bytes())
	if err != nil || doc == nil {
		t.Fatalf("stdout is not a state document (%v): %q; stderr %q", err, out, errOut)
	}
	sec, ok, err := doc.Section("rancher")
	if err != nil || !ok {
		t.Fatalf("no rancher section (%v): %q", err, out)
	}
	return code, sec, errOut.String()
}

func configured() map[string]any {
	return map[string]any{"admins": []any{"alice"}, "url": "https://rancher.example.edu", "token": "token-x:y"}
}

func bootstrapped(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	code, _, out := run(t, t.TempDir(), nil, "describe")
	var d plugin.Descriptor
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("describe: exit %d, %v: %q", code, err, out)
	}
	want := plugin.Descriptor{
		Name: "rancher", Version: d.Version, ConfigSections: []string{"rancher"},
		Hooks:            []string{"init", "validate", "configured", "converge", "destroy", "status", "check"},
		StateAPIVersions: []string{state.APIVersion},
	}
	if diff := cmp.Diff(want, d); diff != "" || d.Version == "" {
		t.Errorf("descriptor mismatch (-want +got):\n%s", diff)
	}
}

func TestDeferredBeforeBootstrap(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"converge"}, {"converge", "--dry-run"}, {"destroy", "--yes"}, {"status"}, {"check"}} {
		code, sec, _ := run(t, t.TempDir(), configured(), args...)
		if code != 0 || sec.Status != state.StatusDeferred || !cmp.Equal(sec.Messages, []string{tcrancher.NeedsKubeconfig}) {
			t.Errorf("%v: exit %d, section %+v", args, code, sec)
		}
	}
}

func TestNotImplementedOnceBootstrapped(t *testing.T) {
	t.Parallel()
	for _, hook := range []string{"converge", "destroy", "status"} {
		code, sec, stderr := run(t, bootstrapped(t), configured(), hook)
		if code != 1 || sec.Status != state.StatusFailed || sec.Error.Message != tcrancher.NotImplemented {
			t.Errorf("%s: exit %d, section %+v", hook, code, sec)
		}
		if !strings.Contains(stderr, "ERROR: "+tcrancher.NotImplemented) {
			t.Errorf("%s: stderr %q", hook, stderr)
		}
	}
	code, sec, _ := run(t, bootstrapped(t), configured(), "check")
	if code != 0 || sec.Status != state.StatusSucceeded || string(sec.Outputs) != `{"ok":false,"reason":"`+tcrancher.NotImplemented+`"}` {
		t.Errorf("check: exit %d, section %+v outputs %s", code, sec, sec.Outputs)
	}
}

func TestNotConfiguredSkips(t *testing.T) {
	t.Parallel()
	code, sec, _ := run(t, bootstrapped(t), map[string]any{"admins": []any{"alice"}}, "converge")
	if code != 0 || sec.Status != state.StatusSkipped {
		t.Errorf("exit %d, section %+v", code, sec)
	}
}

func TestValidateHook(t *testing.T) {
	t.Parallel()
	code, sec, _ := run(t, t.TempDir(), map[string]any{"admins": []any{"bob"}, "users": []any{"bob"}}, "validate")
	if code != 2 || sec.Error == nil || len(sec.Error.Problems) != 1 || !strings.Contains(sec.Error.Problems[0], "'admins' and 'users': bob") {
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
		{Name: "rancher", File: "cluster.yaml", YAML: tcrancher.ClusterScaffold},
		{Name: "rancher", File: "secrets.yaml", YAML: tcrancher.SecretsScaffold},
	}
	if diff := cmp.Diff(want, out.Sections); diff != "" {
		t.Errorf("sections mismatch (-want +got):\n%s", diff)
	}
	// What init writes is valid, has the top-level key, and activates nothing.
	merged := map[string]any{}
	for _, s := range out.Sections {
		var doc map[string]any
		if err := yaml.NewDecoder(bytes.NewReader([]byte(s.YAML))).Decode(&doc); err != nil {
			t.Fatalf("%s snippet: %v", s.File, err)
		}
		v, ok := doc["rancher"]
		if !ok || len(doc) != 1 {
			t.Errorf("%s snippet keys = %v, want only rancher", s.File, doc)
		}
		if s.File == "secrets.yaml" && v != nil {
			t.Errorf("secrets snippet value = %v, want null (credentials commented out)", v)
		}
		if m, isMap := v.(map[string]any); isMap {
			maps.Copy(merged, m)
		}
	}
	if p := tcrancher.Validate(merged); len(p) != 0 {
		t.Errorf("scaffold is invalid: %v", p)
	}
	if tcrancher.Configured(merged) {
		t.Error("the scaffold activates the plugin")
	}
}
