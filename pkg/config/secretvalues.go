package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// minSecretValue is the shortest secrets.yaml value that output redaction
// looks for inside other text: a shorter one ("0", "yes") would hide
// ordinary text everywhere.
const minSecretValue = 4

// secretValues are the scalar values of secrets.yaml, at any depth, and
// those inside a patch written there as YAML text (booleans, nulls and
// values shorter than minSecretValue aside): whatever their key, they are
// hidden wherever a machine configuration they reached is printed
// (Cluster.RevealSecretValues).
func secretValues(srcs []source) []Secret {
	var out []Secret
	var walk func(n *node)
	walk = func(n *node) {
		if n.kind == scalarNode && n.tag != "!!bool" && n.tag != "!!null" {
			out = append(out, textValues(n.value)...)
		}
		for _, e := range n.entries {
			walk(e.val)
		}
		for _, item := range n.items {
			walk(item)
		}
	}
	for _, s := range srcs {
		if s.name == SecretsFile {
			walk(s.root)
		}
	}
	return out
}

// textValues is a scalar's value, or the scalar values inside it when it
// is a YAML document of several lines (a patch written as text).
func textValues(text string) []Secret {
	var doc yaml.Node
	if !strings.Contains(text, "\n") || yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode {
		if len(text) < minSecretValue {
			return nil
		}
		return []Secret{Secret(text)}
	}
	var out []Secret
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Tag != "!!bool" && n.Tag != "!!null" && len(n.Value) >= minSecretValue {
			out = append(out, Secret(n.Value))
		}
		for i, c := range n.Content {
			if n.Kind != yaml.MappingNode || i%2 == 1 {
				walk(c)
			}
		}
	}
	walk(doc.Content[0])
	return out
}

// RevealSecretValues returns the values of secrets.yaml, for redacting
// them wherever they may be printed (the plan's machine-config diff).
func (c *Cluster) RevealSecretValues() []string {
	out := make([]string, len(c.SecretValues))
	for i, s := range c.SecretValues {
		out[i] = s.Reveal()
	}
	return out
}
