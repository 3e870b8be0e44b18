// Package pluginconfig checks a plugin's configuration section: the raw value
// the YAML loader produced (map[string]any, []any, string, bool, numbers or
// nil). It collects problems as "key.path: message" lines, the form of
// plugin.Hooks.Validate, and names what it found in each message ("not the
// string \"yes\"", "not a list", "not null").
//
// Every check reads a key of a mapping: an absent key is never a problem, and
// an explicit null is one only where a scalar is expected. A nil mapping
// reads as empty.
package pluginconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Problems collects configuration problems, each "key.path: message", in the
// order they are found. The zero value is ready to use and stays nil while
// nothing is wrong.
type Problems []string

// Add records "path: message", message being format formatted with args.
func (p *Problems) Add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

// Mapping returns v, the value at path, as a mapping. Nil (absent or null)
// returns nil with no problem; anything else that is not a mapping records
// "path: must be a YAML mapping, not KIND" and returns nil.
func (p *Problems) Mapping(path string, v any) map[string]any {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.Add(path, "must be a YAML mapping, not %s", Kind(v))
		return nil
	}
	return m
}

// Unknown records "path.KEY: message" for every key of m, the mapping at
// path, that allowed does not list, in key order.
func (p *Problems) Unknown(m map[string]any, path string, allowed []string, message string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			p.Add(path+"."+k, "%s", message)
		}
	}
}

// Items describes what a list of strings holds, for Strings.
type Items struct {
	// One names a single item with its article, such as "a username".
	One string
	// Many names the items, such as "usernames".
	Many string
	// Valid accepts an item.
	Valid func(string) bool
}

// Strings checks m[key], the list at path.key, and returns the items Valid
// accepts. Absent or null is an empty list. A value that is not a list records
// "path.key: must be a list of MANY, not KIND"; an item that is not a string
// Valid accepts records "path.key[i]: must be ONE (path.key is a list of
// MANY), not KIND".
func (p *Problems) Strings(m map[string]any, path, key string, items Items) []string {
	v := m[key]
	if v == nil {
		return nil
	}
	path += "." + key
	list, ok := v.([]any)
	if !ok {
		p.Add(path, "must be a list of %s, not %s", items.Many, Kind(v))
		return nil
	}
	var valid []string
	for i, item := range list {
		s, isString := item.(string)
		if !isString || !items.Valid(s) {
			p.Add(fmt.Sprintf("%s[%d]", path, i), "must be %s (%s is a list of %s), not %s", items.One, path, items.Many, Kind(item))
			continue
		}
		valid = append(valid, s)
	}
	return valid
}

// Boolean records "path.key: must be true or false, not KIND" when m[key] is
// present and not a YAML boolean (a quoted "false" included).
func (p *Problems) Boolean(m map[string]any, path, key string) {
	if v, present := m[key]; present {
		if _, ok := v.(bool); !ok {
			p.Add(path+"."+key, "must be true or false, not %s", Kind(v))
		}
	}
}

// String records "path.key: must be a string, not KIND" when m[key] is
// present and not a string.
func (p *Problems) String(m map[string]any, path, key string) {
	if v, present := m[key]; present {
		if _, ok := v.(string); !ok {
			p.Add(path+"."+key, "must be a string, not %s", Kind(v))
		}
	}
}

// NonEmptyString records "path.key: must be a non-empty string, not KIND"
// when m[key] is present and not a string with something besides spaces.
func (p *Problems) NonEmptyString(m map[string]any, path, key string) {
	if v, present := m[key]; present && !NonEmpty(v) {
		p.Add(path+"."+key, "must be a non-empty string, not %s", Kind(v))
	}
}

// NonEmpty reports whether v is a string with something besides spaces.
func NonEmpty(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) != ""
}

// Kind names the YAML type of v for messages: "null", "an empty string", "the
// string \"x\"", "the boolean true", "the number 3", "a list", "a mapping".
func Kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if strings.TrimSpace(x) == "" {
			return "an empty string"
		}
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case int, int64, uint64, float64, float32, int32, uint, uint32:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
