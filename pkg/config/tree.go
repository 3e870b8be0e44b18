package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"gopkg.in/yaml.v3"
)

// kind is the shape of a node in the merged configuration tree.
type kind uint8

const (
	nullNode kind = iota
	scalarNode
	mapNode
	seqNode
)

// node is one YAML value with the file and line it came from. Aliases and
// merge keys are expanded, so every node has exactly one parent and merging
// include files can mutate mappings in place.
type node struct {
	kind    kind
	tag     string // resolved short tag of a scalar (!!str, !!int, ...)
	value   string
	plain   bool // an untagged, unquoted scalar (YAML 1.1 booleans apply)
	entries []entry
	items   []*node
	file    string
	line    int
}

// entry is one key of a mapping, in file order.
type entry struct {
	key  string
	line int
	val  *node
}

func (n *node) isNull() bool { return n == nil || n.kind == nullNode }

// index returns the position of key in a mapping, or -1.
func (n *node) index(key string) int {
	for i, e := range n.entries {
		if e.key == key {
			return i
		}
	}
	return -1
}

// remove deletes key from a mapping and returns its entry.
func (n *node) remove(key string) (entry, bool) {
	i := n.index(key)
	if i < 0 {
		return entry{}, false
	}
	e := n.entries[i]
	n.entries = append(n.entries[:i], n.entries[i+1:]...)
	return e, true
}

// converter turns one parsed yaml.Node document into a node tree.
type converter struct {
	file   string
	budget int
	active map[*yaml.Node]bool
	probs  *collector
	err    error
}

// parseYAML parses data as exactly one YAML document. A document that is
// empty or only comments yields a nil node. Parser panics are turned into
// errors: the configuration is untrusted input.
func parseYAML(data []byte) (doc *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, errYAMLPanic(r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, err
	default:
		return nil, errors.New("expected a single YAML document, found more than one")
	}
	if first.Kind == yaml.DocumentNode {
		if len(first.Content) == 0 {
			return nil, nil
		}
		return first.Content[0], nil
	}
	return &first, nil
}

func errYAMLPanic(r any) error { return fmt.Errorf("yaml parser failed: %v", r) }

// parseFile parses one configuration file into a mapping node. The second
// result is false when the file could not be used (a problem is recorded).
func parseFile(display, path string, data []byte, probs *collector) (*node, bool) {
	doc, err := parseYAML(data)
	if err != nil {
		probs.addf(display, 0, "", "could not parse %s: %v", path, err)
		return nil, false
	}
	c := &converter{file: display, budget: 10000 + 4*len(data), active: map[*yaml.Node]bool{}, probs: probs}
	root := &node{kind: mapNode, file: display, line: 1}
	if doc != nil {
		root = c.convert(doc, "")
	}
	if c.err != nil {
		probs.addf(display, 0, "", "could not parse %s: %v", path, c.err)
		return nil, false
	}
	switch root.kind {
	case mapNode:
		return root, true
	case nullNode:
		return &node{kind: mapNode, file: display, line: 1}, true
	default:
		probs.addf(display, root.line, "", "%s must be a YAML mapping of keys, not %s", display, describe(root))
		return nil, false
	}
}

func (c *converter) convert(y *yaml.Node, path string) *node {
	if c.err != nil {
		return &node{file: c.file}
	}
	// The budget bounds alias expansion ("billion laughs").
	if c.budget--; c.budget < 0 {
		c.err = errors.New("too many values after expanding aliases")
		return &node{file: c.file}
	}
	switch y.Kind {
	case yaml.AliasNode:
		return c.alias(y, path)
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{file: c.file, line: y.Line}
		}
		return c.convert(y.Content[0], path)
	case yaml.SequenceNode:
		if y.ShortTag() != "!!seq" {
			c.badTag(y, path)
		}
		n := &node{kind: seqNode, file: c.file, line: y.Line}
		for i, item := range y.Content {
			n.items = append(n.items, c.convert(item, path+"["+strconv.Itoa(i)+"]"))
		}
		return n
	case yaml.MappingNode:
		if y.ShortTag() != "!!map" {
			c.badTag(y, path)
		}
		return c.mapping(y, path)
	default:
		return c.scalar(y, path)
	}
}

func (c *converter) alias(y *yaml.Node, path string) *node {
	target := y.Alias
	if target == nil {
		return &node{file: c.file, line: y.Line}
	}
	if c.active[target] {
		c.err = fmt.Errorf("line %d: alias *%s refers to the value that contains it", y.Line, y.Value)
		return &node{file: c.file}
	}
	c.active[target] = true
	defer delete(c.active, target)
	return c.convert(target, path)
}

func (c *converter) scalar(y *yaml.Node, path string) *node {
	tag := y.ShortTag()
	n := &node{kind: scalarNode, tag: tag, value: y.Value, file: c.file, line: y.Line}
	n.plain = y.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
	switch tag {
	case "!!null":
		n.kind = nullNode
	case "!!str", "!!int", "!!float", "!!bool":
	case "!!timestamp", "!!binary":
		// Kept as text, as the reference's str() of the value would be.
		n.tag = "!!str"
	default:
		// Reported, then read as a string so the value causes no more problems.
		c.badTag(y, path)
		n.tag = "!!str"
	}
	return n
}

func (c *converter) badTag(y *yaml.Node, path string) {
	c.probs.addf(c.file, y.Line, path, "%s uses the YAML tag %s, which talosc does not support", orRoot(path), y.Tag)
}

func (c *converter) mapping(y *yaml.Node, path string) *node {
	n := &node{kind: mapNode, file: c.file, line: y.Line}
	lines := map[string]int{}
	var merges []*node
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			c.probs.addf(c.file, k.Line, path, "%s has a key that is a %s; keys must be plain names", orRoot(path), describe(c.convert(k, path)))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, c.convert(v, path))
			continue
		}
		kp := joinPath(path, k.Value)
		if first, dup := lines[k.Value]; dup {
			c.probs.addf(c.file, k.Line, kp, "%s is set twice in this mapping (lines %d and %d)", kp, first, k.Line)
			continue
		}
		lines[k.Value] = k.Line
		n.entries = append(n.entries, entry{key: k.Value, line: k.Line, val: c.convert(v, kp)})
	}
	for _, m := range merges {
		c.merge(n, m, path)
	}
	return n
}

// merge applies a YAML merge key (<<: *anchor or <<: [*a, *b]): keys of the
// merged mappings are added unless the mapping already has them.
func (c *converter) merge(n, src *node, path string) {
	switch src.kind {
	case seqNode:
		for _, item := range src.items {
			c.merge(n, item, path)
		}
	case mapNode:
		for _, e := range src.entries {
			if n.index(e.key) < 0 {
				n.entries = append(n.entries, e)
			}
		}
	case nullNode:
	default:
		c.probs.addf(c.file, src.line, path, "%s: the merge key << must refer to a mapping", orRoot(path))
	}
}

// describe names the shape of a value for type errors.
func describe(n *node) string {
	switch {
	case n.isNull():
		return "empty"
	case n.kind == mapNode:
		return "a mapping"
	case n.kind == seqNode:
		return "a list"
	case n.tag == "!!str":
		v := []rune(n.value)
		if len(v) > 40 {
			v = append(v[:40], []rune("...")...)
		}
		return "the string " + strconv.Quote(string(v))
	case n.tag == "!!bool":
		return "the boolean " + n.value
	default:
		return "the number " + n.value
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}
