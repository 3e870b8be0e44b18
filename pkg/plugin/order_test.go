package plugin_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
)

func p(name string, after ...string) plugin.Plugin {
	return plugin.Plugin{Descriptor: plugin.Descriptor{Name: name, After: after}}
}

func names(ps []plugin.Plugin) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       []plugin.Plugin
		want     []string
		wantWarn string
	}{
		{"empty", nil, []string{}, ""},
		{"alphabetical without edges", []plugin.Plugin{p("charts"), p("argocd"), p("rancher")}, []string{"argocd", "charts", "rancher"}, ""},
		{"bundled: argocd after rancher", []plugin.Plugin{p("argocd", "rancher"), p("rancher"), p("charts")}, []string{"charts", "rancher", "argocd"}, ""},
		{
			"tiers are alphabetical",
			[]plugin.Plugin{p("z"), p("y", "z"), p("b", "z"), p("a", "b", "y")},
			[]string{"z", "b", "y", "a"},
			"",
		},
		{"unknown after names are ignored", []plugin.Plugin{p("b", "missing"), p("a", "ghost")}, []string{"a", "b"}, ""},
		{"self reference is ignored", []plugin.Plugin{p("b", "b"), p("a")}, []string{"a", "b"}, ""},
		{
			"cycle breaks alphabetically after the acyclic part",
			[]plugin.Plugin{p("c", "b"), p("b", "c"), p("a"), p("d", "c")},
			[]string{"a", "b", "c", "d"},
			"plugin ordering has a cycle (b, c, d); falling back to alphabetical",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var warns []string
			got := plugin.Order(tt.in, func(m string) { warns = append(warns, m) })
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("Order() mismatch (-want +got):\n%s", diff)
			}
			if tt.wantWarn == "" && len(warns) > 0 {
				t.Errorf("unexpected warnings %q", warns)
			}
			if tt.wantWarn != "" && strings.Join(warns, "\n") != tt.wantWarn {
				t.Errorf("warnings = %q, want %q", warns, tt.wantWarn)
			}
		})
	}
}

func TestOrderNilWarn(t *testing.T) {
	t.Parallel()
	got := plugin.Order([]plugin.Plugin{p("a", "b"), p("b", "a")}, nil)
	if diff := cmp.Diff([]string{"a", "b"}, names(got)); diff != "" {
		t.Errorf("Order() mismatch (-want +got):\n%s", diff)
	}
}
