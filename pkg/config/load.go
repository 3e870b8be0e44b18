package config

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// metalMessage refuses the metal section until talosc supports bare metal.
const metalMessage = "metal: bare-metal machines are not supported yet by talosc; remove the metal section (support is planned)"

// Load reads dir/cluster.yaml and its includes, strictly. An invalid
// configuration yields a Problems error listing every problem found; a
// missing or unreadable cluster.yaml yields a plain error (wrapping
// fs.ErrNotExist when it does not exist).
func Load(dir string, opts LoadOptions) (*Cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster directory %s: %w", dir, err)
	}
	probs := &collector{}
	l := &loader{dir: abs, opts: opts, probs: probs, reals: map[string]int{}}
	srcs, err := l.sources()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: abs, Include: l.include}
	if len(srcs) > 0 {
		readableSecrets(srcs, probs)
		c.SecretValues = secretValues(srcs)
		root := l.merge(srcs)
		c.Plugins = l.pluginSections(root)
		if e, ok := root.remove("metal"); ok && !e.val.isNull() {
			probs.add(e.val.file, e.line, "metal", metalMessage)
		}
		d := newDecoder(probs)
		d.decode(root, reflect.ValueOf(c).Elem(), "")
		v := &validator{c: c, opts: opts, d: d, p: probs}
		v.defaults()
		v.validate()
	}
	for _, s := range srcs {
		c.Files = append(c.Files, s.name)
	}
	if len(probs.problems) > 0 {
		return nil, probs.problems
	}
	c.Warnings = probs.warnings
	return c, nil
}

// topLevelKeys are the core keys of cluster.yaml in schema order.
func topLevelKeys() []string {
	keys := yamlFields(reflect.TypeFor[Cluster]()).names()
	return append(keys, "metal")
}

// merge checks each file's top-level keys, then merges the files into the
// first one, key by key.
func (l *loader) merge(srcs []source) *node {
	core := topLevelKeys()
	allowed := slices.Clone(core)
	for k := range l.opts.PluginSections {
		if !slices.Contains(core, k) {
			allowed = append(allowed, k)
		}
	}
	slices.Sort(allowed[len(core):])
	for _, s := range srcs {
		l.unknownTopLevel(s, allowed)
	}
	root := srcs[0].root
	for _, s := range srcs[1:] {
		mergeInto(root, s.root, "", l.probs)
	}
	return root
}

// unknownTopLevel reports (and drops) the top-level keys of one file that
// neither talosc nor an installed plugin uses.
func (l *loader) unknownTopLevel(s source, allowed []string) {
	var bad []string
	line := 0
	for _, e := range slices.Clone(s.root.entries) {
		if slices.Contains(allowed, e.key) {
			continue
		}
		if line == 0 {
			line = e.line
		}
		item := e.key
		if hint := suggest(e.key, allowed); hint != "" {
			item += " (did you mean " + hint + "?)"
		}
		bad = append(bad, item)
		s.root.remove(e.key)
	}
	if len(bad) > 0 {
		l.probs.addf(s.name, line, "", "unknown key(s): %s; talosc does not use them (is a plugin that uses them missing from PATH?)",
			strings.Join(bad, ", "))
	}
}

// mergeInto merges mapping src into mapping dst. Mappings merge key by key;
// a scalar or list set in both files is refused; null is absent.
func mergeInto(dst, src *node, path string, probs *collector) {
	for _, e := range src.entries {
		kp := joinPath(path, e.key)
		i := dst.index(e.key)
		if i < 0 {
			dst.entries = append(dst.entries, e)
			continue
		}
		d := &dst.entries[i]
		switch {
		case e.val.isNull():
		case d.val.isNull():
			d.val, d.line = e.val, e.line
		case d.val.kind == mapNode && e.val.kind == mapNode:
			mergeInto(d.val, e.val, kp, probs)
		default:
			probs.addf(e.val.file, e.line, kp, "%s is set in both %s and %s; set it in one file only", kp, d.val.file, e.val.file)
		}
	}
}

// pluginSections removes the installed plugins' sections from root and
// returns their values as JSON-compatible Go values.
func (l *loader) pluginSections(root *node) map[string]any {
	out := map[string]any{}
	core := topLevelKeys()
	for _, e := range slices.Clone(root.entries) {
		if _, ok := l.opts.PluginSections[e.key]; !ok || slices.Contains(core, e.key) {
			continue
		}
		root.remove(e.key)
		if !e.val.isNull() {
			out[e.key] = jsonValue(e.val)
		}
	}
	return out
}

// jsonValue converts a node to map[string]any, []any, string, int, float64,
// bool or nil. Non-finite floats (.inf, .nan) have no JSON form and are kept
// as their YAML text.
func jsonValue(n *node) any {
	switch {
	case n.isNull():
		return nil
	case n.kind == mapNode:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			m[e.key] = jsonValue(e.val)
		}
		return m
	case n.kind == seqNode:
		s := make([]any, len(n.items))
		for i, item := range n.items {
			s[i] = jsonValue(item)
		}
		return s
	}
	return jsonScalar(n)
}

func jsonScalar(n *node) any {
	y := yaml.Node{Kind: yaml.ScalarNode, Tag: n.tag, Value: n.value}
	switch n.tag {
	case "!!bool":
		var b bool
		if y.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int
		if y.Decode(&i) == nil {
			return i
		}
		var f float64
		if y.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if y.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.value
}
