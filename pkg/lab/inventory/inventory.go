// Package inventory is the lab clouds' whole-inventory snapshot: every
// resource a cloud holds, tagged or not, one line per resource ("kind name
// key=value ..."), free of ids and sorted, so that two snapshots taken in
// different runs compare line by line and an untagged leftover, a
// duplicate or a detached volume shows up as a line more.
package inventory

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Snapshot is a whole inventory: its lines, sorted (duplicates kept: two
// identical resources are two lines).
type Snapshot []string

// Builder collects the lines of a snapshot.
type Builder struct{ lines []string }

// Add adds one resource: its kind, its name ("" renders as "-") and its
// attributes, rendered in order; a nil or empty attribute is left out.
func (b *Builder) Add(kind, name string, attrs ...Attr) {
	if name == "" {
		name = "-"
	}
	parts := []string{kind, quote(name)}
	for _, a := range attrs {
		if a.Value != "" {
			parts = append(parts, a.Key+"="+quote(a.Value))
		}
	}
	b.lines = append(b.lines, strings.Join(parts, " "))
}

// Snapshot returns the sorted lines.
func (b *Builder) Snapshot() Snapshot {
	out := slices.Clone(b.lines)
	slices.Sort(out)
	return out
}

// Attr is one attribute of a resource.
type Attr struct{ Key, Value string }

// A is an attribute whose value is v as fmt prints it; false, 0 and ""
// are left out.
func A(key string, v any) Attr {
	switch x := v.(type) {
	case string:
		return Attr{key, x}
	case bool:
		if !x {
			return Attr{}
		}
	case int:
		if x == 0 {
			return Attr{}
		}
	}
	return Attr{key, fmt.Sprint(v)}
}

// List is an attribute listing values, sorted and comma-separated.
func List(key string, values []string) Attr {
	s := slices.Clone(values)
	slices.Sort(s)
	return Attr{key, strings.Join(s, ",")}
}

// Map is an attribute listing a map's entries as k:v, sorted by key.
func Map(key string, m map[string]string) Attr {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+":"+m[k])
	}
	return Attr{key, strings.Join(parts, "|")}
}

// quote quotes a value that holds a space, a quote or nothing, so that a
// line splits back into its fields.
func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"\\") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// String renders the snapshot: one line per resource.
func (s Snapshot) String() string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "\n") + "\n"
}

// Parse reads a snapshot String rendered (a golden file); blank lines and
// lines starting with "#" are left out.
func Parse(text string) Snapshot {
	var out Snapshot
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// Diff returns what changed from was to now: "- line" for a resource
// gone, "+ line" for a resource more (a changed resource is both), in
// line order. Nothing changed: nil.
func Diff(was, now Snapshot) []string {
	count := map[string]int{}
	for _, l := range was {
		count[l]--
	}
	for _, l := range now {
		count[l]++
	}
	var out []string
	for _, l := range slices.Sorted(maps.Keys(count)) {
		sign, n := "+ ", count[l]
		if n < 0 {
			sign, n = "- ", -n
		}
		for range n {
			out = append(out, sign+l)
		}
	}
	return out
}
