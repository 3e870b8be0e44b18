package plugin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
)

// TestBundledSpec checks the wiring of a bundled plugin: its section is what
// Validate and Configured see, an empty scaffold is left out, a nil
// Validate offers no validate hook, and the work is Work's hooks (and only
// those four).
func TestBundledSpec(t *testing.T) {
	t.Parallel()
	var seen []any
	spec := plugin.Bundled{
		Name:            "demo",
		After:           []string{"rancher"},
		ClusterScaffold: "demo: {}\n",
		Configured:      func(section any) bool { seen = append(seen, section); return section != nil },
		Work: plugin.Hooks{
			Converge: func(context.Context, *plugin.Context) (plugin.Result, error) {
				return plugin.Result{Messages: []string{"converged"}}, nil
			},
			Init: func(context.Context, *plugin.Context) ([]plugin.InitSection, error) {
				return nil, errors.New("not Work's")
			},
		},
	}.Spec()
	d := spec.Descriptor
	if d.Name != "demo" || d.Version == "" || !cmp.Equal(d.After, []string{"rancher"}) || !cmp.Equal(d.ConfigSections, []string{"demo"}) {
		t.Errorf("descriptor %+v", d)
	}
	h := spec.Hooks
	if h.Validate != nil || h.Init == nil || h.Converge == nil || h.Destroy != nil || h.Status != nil || h.Check != nil {
		t.Fatalf("hooks %+v", h)
	}
	if r, err := h.Converge(t.Context(), &plugin.Context{}); err != nil || !cmp.Equal(r.Messages, []string{"converged"}) {
		t.Errorf("converge is not Work's: %+v, %v", r, err)
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
