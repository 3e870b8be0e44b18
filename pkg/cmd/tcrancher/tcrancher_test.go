package tcrancher_test

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/cmd/tcrancher"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
	"github.com/talosc/talosc/pkg/state"
)

// harness runs tc-rancher with the merged rancher section a test supplies.
func harness() plugintest.Harness {
	return plugintest.Harness{Spec: tcrancher.Spec(), Sections: "rancher=rancher"}
}

func configured() map[string]any {
	return map[string]any{"admins": []any{"alice"}, "url": "https://rancher.example.edu", "token": "token-x:y"}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	harness().CheckDescribe(t, plugin.Descriptor{
		Name: "rancher", ConfigSections: []string{"rancher"},
		Hooks:            []string{"init", "validate", "configured", "converge", "destroy", "status", "check"},
		StateAPIVersions: []string{state.APIVersion},
	})
}

func TestDeferredBeforeBootstrap(t *testing.T) {
	t.Parallel()
	harness().CheckDeferred(t, configured(), tcrancher.NeedsKubeconfig)
}

func TestNotConfiguredSkips(t *testing.T) {
	t.Parallel()
	code, sec, _ := harness().Run(t, plugintest.Bootstrapped(t), map[string]any{"admins": []any{"alice"}}, "converge")
	if code != 0 || sec.Status != state.StatusSkipped {
		t.Errorf("exit %d, section %+v", code, sec)
	}
}

func TestValidateHook(t *testing.T) {
	t.Parallel()
	code, sec, _ := harness().Run(t, t.TempDir(), map[string]any{"admins": []any{"bob"}, "users": []any{"bob"}}, "validate")
	if code != 2 || sec.Error == nil || len(sec.Error.Problems) != 1 || !strings.Contains(sec.Error.Problems[0], "'admins' and 'users': bob") {
		t.Errorf("exit %d, section %+v", code, sec)
	}
}

func TestInitScaffolds(t *testing.T) {
	t.Parallel()
	harness().CheckInit(t, []plugin.InitSection{
		{Name: "rancher", File: "cluster.yaml", YAML: tcrancher.ClusterScaffold},
		{Name: "rancher", File: "secrets.yaml", YAML: tcrancher.SecretsScaffold},
	}, tcrancher.Validate, tcrancher.Configured)
}
