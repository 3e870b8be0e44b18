package pluginconfig_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin/pluginconfig"
)

func TestKind(t *testing.T) {
	t.Parallel()
	tests := map[string]any{
		"null":              nil,
		"an empty string":   " ",
		`the string "x"`:    "x",
		"the boolean false": false,
		"the number 3":      3,
		"the number 1.5":    1.5,
		"a list":            []any{},
		"a mapping":         map[string]any{},
		"a map[int]string":  map[int]string{},
	}
	for want, v := range tests {
		if got := pluginconfig.Kind(v); got != want {
			t.Errorf("Kind(%#v) = %q, want %q", v, got, want)
		}
	}
}

// TestProblems runs every check over one section, in order.
func TestProblems(t *testing.T) {
	t.Parallel()
	var p pluginconfig.Problems
	if p.Mapping("s", nil) != nil || p.Mapping("s", "x") != nil {
		t.Error("Mapping() of null or a string is not nil")
	}
	sec := p.Mapping("s", map[string]any{
		"on": "true", "name": 1, "version": " ", "members": []any{"ok", "not ok", 2}, "extra": nil,
		"flag": true, "label": "x", "tag": "v1",
	})
	p.Unknown(sec, "s", []string{"on", "name", "version", "members", "flag", "label", "tag"}, "unknown key; 100% sure")
	valid := p.Strings(sec, "s", "members", pluginconfig.Items{
		One: "a word", Many: "words",
		Valid: func(s string) bool { return !strings.Contains(s, " ") },
	})
	for _, k := range []string{"on", "flag", "absent"} {
		p.Boolean(sec, "s", k)
	}
	for _, k := range []string{"name", "label", "absent"} {
		p.String(sec, "s", k)
	}
	for _, k := range []string{"version", "tag", "absent"} {
		p.NonEmptyString(sec, "s", k)
	}
	p.Strings(sec, "s", "label", pluginconfig.Items{One: "a word", Many: "words"})
	want := pluginconfig.Problems{
		`s: must be a YAML mapping, not the string "x"`,
		"s.extra: unknown key; 100% sure",
		`s.members[1]: must be a word (s.members is a list of words), not the string "not ok"`,
		"s.members[2]: must be a word (s.members is a list of words), not the number 2",
		`s.on: must be true or false, not the string "true"`,
		"s.name: must be a string, not the number 1",
		"s.version: must be a non-empty string, not an empty string",
		`s.label: must be a list of words, not the string "x"`,
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ok"}, valid); diff != "" {
		t.Errorf("Strings() mismatch (-want +got):\n%s", diff)
	}
}

func TestNothingWrongStaysNil(t *testing.T) {
	t.Parallel()
	var p pluginconfig.Problems
	sec := p.Mapping("s", map[string]any{"members": nil})
	p.Unknown(sec, "s", []string{"members"}, "unknown")
	p.Strings(sec, "s", "members", pluginconfig.Items{})
	p.Unknown(nil, "s", nil, "unknown")
	if p != nil {
		t.Errorf("problems = %#v, want nil", p)
	}
}
