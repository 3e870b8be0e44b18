package tcargocd_test

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
	"github.com/talosc/talosc/pkg/state"
)

// harness runs tc-argocd (with rancher installed) with the merged argocd
// section a test supplies.
func harness() plugintest.Harness {
	return plugintest.Harness{Spec: tcargocd.Spec(), Sections: "argocd=argocd,rancher=rancher"}
}

func active() map[string]any { return map[string]any{"kubeconfig": "../argocd-kubeconfig"} }

func TestDescribe(t *testing.T) {
	t.Parallel()
	harness().CheckDescribe(t, plugin.Descriptor{
		Name: "argocd", After: []string{"rancher"}, ConfigSections: []string{"argocd"},
		Hooks:            []string{"init", "validate", "configured", "converge", "destroy", "status", "check"},
		StateAPIVersions: []string{state.APIVersion},
	})
}

// TestAR9_PlanDeferredBeforeBootstrap: every hook defers before the
// cluster has a kubeconfig.
func TestAR9_PlanDeferredBeforeBootstrap(t *testing.T) {
	t.Parallel()
	harness().CheckDeferred(t, active(), tcargocd.NeedsKubeconfig)
}

// TestAR1_URLTokenAloneDoesNotActivate: url/token alone is not an apply
// target.
func TestAR1_URLTokenAloneDoesNotActivate(t *testing.T) {
	t.Parallel()
	code, sec, _ := harness().Run(t, t.TempDir(), map[string]any{"url": "https://argocd", "token": "t"}, "converge")
	if code != 0 || sec.Status != state.StatusSkipped {
		t.Errorf("exit %d, section %+v", code, sec)
	}
	code, sec, _ = harness().Run(t, t.TempDir(), map[string]any{"url": "https://argocd", "token": "t"}, "configured")
	if code != 0 || string(sec.Outputs) != `{"configured":false}` {
		t.Errorf("configured: exit %d, outputs %s", code, sec.Outputs)
	}
}

// TestConvergeValidatesFirst: a lone git URL is refused even though the
// plugin is not configured, before anything else.
func TestConvergeValidatesFirst(t *testing.T) {
	t.Parallel()
	code, sec, _ := harness().Run(t, t.TempDir(), map[string]any{"git": map[string]any{"url": "https://git"}}, "converge", "--dry-run")
	if code != 2 || sec.Error == nil || len(sec.Error.Problems) != 1 || !strings.HasPrefix(sec.Error.Problems[0], "argocd.infra.url: must be set together") {
		t.Errorf("exit %d, section %+v", code, sec)
	}
}

func TestInitScaffolds(t *testing.T) {
	t.Parallel()
	harness().CheckInit(t, []plugin.InitSection{
		{Name: "argocd", File: "cluster.yaml", YAML: tcargocd.ClusterScaffold},
		{Name: "argocd", File: "secrets.yaml", YAML: tcargocd.SecretsScaffold},
	}, tcargocd.Validate, tcargocd.Configured)
}
