package plugin_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
)

func withSections(name string, sections ...string) plugin.Plugin {
	return plugin.Plugin{Descriptor: plugin.Descriptor{Name: name, ConfigSections: sections}}
}

func TestSections(t *testing.T) {
	t.Parallel()
	ps := []plugin.Plugin{
		withSections("rancher", "rancher"),
		withSections("argocd", "argocd"),
		withSections("charts", "charts", "helm"),
		withSections("late", "rancher"), // conflict: the first keeps it
		withSections("none"),
	}
	want := map[string]string{"rancher": "rancher", "argocd": "argocd", "charts": "charts", "helm": "charts"}
	if diff := cmp.Diff(want, plugin.Sections(ps)); diff != "" {
		t.Errorf("Sections() mismatch (-want +got):\n%s", diff)
	}
	env := plugin.SectionsEnv(ps)
	if wantEnv := "argocd=argocd,charts=charts,helm=charts,rancher=rancher"; env != wantEnv {
		t.Errorf("SectionsEnv() = %q, want %q", env, wantEnv)
	}
	if diff := cmp.Diff(want, plugin.ParseSectionsEnv(env)); diff != "" {
		t.Errorf("ParseSectionsEnv(SectionsEnv()) mismatch (-want +got):\n%s", diff)
	}
}

func TestParseSectionsEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"a=x", map[string]string{"a": "x"}},
		{" a = x , b=y,,", map[string]string{"a": "x", "b": "y"}},
		{"novalue,=x,y=,ok=z", map[string]string{"ok": "z"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, plugin.ParseSectionsEnv(tt.in)); diff != "" {
			t.Errorf("ParseSectionsEnv(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestDefaultTimeout(t *testing.T) {
	t.Parallel()
	want := map[string]time.Duration{
		plugin.HookDescribe: 30 * time.Second, plugin.HookInit: 30 * time.Second,
		plugin.HookValidate: 30 * time.Second, plugin.HookConfigured: 30 * time.Second,
		plugin.HookStatus: 2 * time.Minute, plugin.HookCheck: 2 * time.Minute,
		plugin.HookConverge: 30 * time.Minute, plugin.HookDestroy: 30 * time.Minute,
	}
	for hook, d := range want {
		if got := plugin.DefaultTimeout(hook); got != d {
			t.Errorf("DefaultTimeout(%q) = %s, want %s", hook, got, d)
		}
	}
}

func TestImplements(t *testing.T) {
	t.Parallel()
	pl := plugin.Plugin{Descriptor: plugin.Descriptor{Hooks: []string{"configured", "converge"}}}
	for hook, want := range map[string]bool{"describe": true, "configured": true, "converge": true, "check": false, "init": false} {
		if got := pl.Implements(hook); got != want {
			t.Errorf("Implements(%q) = %t, want %t", hook, got, want)
		}
	}
}
