package configdiff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxNodes bounds the nodes a config may expand to through aliases (a
// "billion laughs" document is refused instead of exhausting memory).
const maxNodes = 1 << 20

// parse returns the redacted root mapping of every non-empty document,
// with aliases expanded, comments dropped and styles reset so both sides of
// a diff are encoded the same way.
//
// Redaction runs on the tree as written, before aliases are expanded, and
// follows every alias: an anchored value hidden where it is used (password:
// *p) is hidden where it is defined too, since both are the same node.
func (r *redactor) parse(b []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var roots []*yaml.Node
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return roots, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue // an empty document between separators
		}
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("document %d: a machine-config document must be a mapping, not a %s", i, kindName(root.Kind))
		}
		r.redact(root)
		budget := maxNodes
		root, err = normalise(root, &budget, 0)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		roots = append(roots, root)
	}
}

// normalise returns a copy of n with aliases replaced by copies of their
// targets, anchors, comments and styles cleared (block collections, quoting
// only where needed).
func normalise(n *yaml.Node, budget *int, depth int) (*yaml.Node, error) {
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("more than %d nodes after expanding aliases", maxNodes)
	}
	if depth > 10_000 {
		return nil, errors.New("nesting too deep")
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, errors.New("alias without a target")
		}
		return normalise(n.Alias, budget, depth+1)
	}
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		c.Style = yaml.LiteralStyle // a block scalar stays one, folded or not
	}
	for _, child := range n.Content {
		cc, err := normalise(child, budget, depth+1)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, cc)
	}
	return c, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.DocumentNode:
		return "document"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}

// identity names a document: "v1alpha1" for the legacy document, else
// <apiVersion>/<kind>[/<name>].
func identity(root *yaml.Node) string {
	kind := scalarValue(root, "kind")
	if kind == "" {
		return LegacyDocument
	}
	id := scalarValue(root, "apiVersion") + "/" + kind
	if name := scalarValue(root, "name"); name != "" {
		id += "/" + name
	}
	return id
}

// scalarValue is the value of a top-level scalar key ("" when absent).
func scalarValue(m *yaml.Node, key string) string {
	if v := lookup(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return strings.ReplaceAll(v.Value, "\n", " ")
	}
	return ""
}

// lookup returns the value of key in mapping m, nil when absent.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// encode renders one document with Talos's four-space indentation.
func encode(root *yaml.Node) (string, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(4)
	if err := enc.Encode(root); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return buf.String(), nil
}
