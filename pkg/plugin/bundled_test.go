package plugin_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
	"github.com/talosc/talosc/pkg/state"
)

// TestBundledSpec checks the wiring of a bundled plugin: its section is what
// Validate and Configured see, an empty scaffold is left out and a nil
// Validate offers no validate hook.
func TestBundledSpec(t *testing.T) {
	t.Parallel()
	var seen []any
	spec := plugin.Bundled{
		Name:            "demo",
		After:           []string{"rancher"},
		ClusterScaffold: "demo: {}\n",
		Configured:      func(section any) bool { seen = append(seen, section); return section != nil },
		Pending:         plugin.Pending{NeedsKubeconfig: "later", NotImplemented: "demo work" + plugin.NotImplementedSuffix},
	}.Spec()
	d := spec.Descriptor
	if d.Name != "demo" || d.Version == "" || !cmp.Equal(d.After, []string{"rancher"}) || !cmp.Equal(d.ConfigSections, []string{"demo"}) {
		t.Errorf("descriptor %+v", d)
	}
	h := spec.Hooks
	if h.Validate != nil || h.Init == nil || h.Converge == nil || h.Destroy == nil || h.Status == nil || h.Check == nil {
		t.Fatalf("hooks %+v", h)
	}
	ctx := t.Context()
	sections, err := h.Init(ctx, &plugin.Context{})
	want := []plugin.InitSection{{Name: "demo", File: "cluster.yaml", YAML: "demo: {}\n"}}
	if err != nil || !cmp.Equal(want, sections) {
		t.Errorf("init = %+v, %v", sections, err)
	}
	c := &plugin.Context{Section: map[string]any{"demo": "x", "other": "y"}}
	if ok, err := h.Configured(ctx, c); !ok || err != nil || !cmp.Equal(seen, []any{"x"}) {
		t.Errorf("configured = %t, %v; saw %v", ok, err, seen)
	}
}

// TestPendingBeforeAndAfterBootstrap checks the boundary hooks directly.
func TestPendingBeforeAndAfterBootstrap(t *testing.T) {
	t.Parallel()
	p := plugin.Pending{NeedsKubeconfig: "later", NotImplemented: "demo work" + plugin.NotImplementedSuffix}
	ctx := t.Context()
	before := &plugin.Context{Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	r, err := p.Change(ctx, before)
	if err != nil || r.Status != state.StatusDeferred || !cmp.Equal(r.Messages, []string{"later"}) {
		t.Errorf("change before bootstrap = %+v, %v", r, err)
	}
	var deferred *plugin.DeferredError
	if _, err := p.Status(ctx, before); !errors.As(err, &deferred) || deferred.Reason != "later" {
		t.Errorf("status before bootstrap: %v", err)
	}
	if _, err := p.Check(ctx, before); !errors.As(err, &deferred) {
		t.Errorf("check before bootstrap: %v", err)
	}

	after := &plugin.Context{Kubeconfig: filepath.Join(plugintest.Bootstrapped(t), "kubeconfig")}
	const msg = "demo work is not implemented in this talosc build"
	if _, err := p.Change(ctx, after); err == nil || err.Error() != msg {
		t.Errorf("change after bootstrap: %v", err)
	}
	if _, err := p.Status(ctx, after); err == nil || err.Error() != msg {
		t.Errorf("status after bootstrap: %v", err)
	}
	if rep, err := p.Check(ctx, after); err != nil || !cmp.Equal(rep, map[string]any{"ok": false, "reason": msg}) {
		t.Errorf("check after bootstrap = %v, %v", rep, err)
	}
}
