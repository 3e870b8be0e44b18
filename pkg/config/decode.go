package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// nodeDecoder is implemented by types whose YAML shape is not a plain struct,
// list or scalar (ordered maps, either-or values).
type nodeDecoder interface {
	decodeNode(d *decoder, n *node, path string)
}

// decoder walks the merged tree into the typed Cluster. It records every
// problem instead of stopping, and remembers which paths were set (seen),
// which failed to decode (failed) and which were written at an old location
// (moved), so validation neither repeats nor contradicts decode errors.
type decoder struct {
	probs  *collector
	seen   map[string]*node
	failed map[string]bool
	moved  map[string]bool
}

func newDecoder(probs *collector) *decoder {
	return &decoder{probs: probs, seen: map[string]*node{}, failed: map[string]bool{}, moved: map[string]bool{}}
}

// errf records a problem at n whose message starts with path.
func (d *decoder) errf(n *node, path, format string, args ...any) {
	d.failed[path] = true
	d.probs.add(n.file, n.line, path, path+" "+fmt.Sprintf(format, args...))
}

// decode stores n into v. A null node leaves v untouched (null == absent).
func (d *decoder) decode(n *node, v reflect.Value, path string) {
	if n.isNull() {
		return
	}
	d.seen[path] = n
	// Every value decoded here is a struct field or slice element reached
	// through a pointer, so it is addressable.
	switch p := v.Addr().Interface().(type) {
	case nodeDecoder:
		p.decodeNode(d, n, path)
		return
	case *netip.Addr:
		if a, ok := d.addr(n, path); ok {
			*p = a
		}
		return
	case *netip.Prefix:
		if pr, ok := d.prefix(n, path); ok {
			*p = pr
		}
		return
	}
	d.decodeKind(n, v, path)
}

func (d *decoder) decodeKind(n *node, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.String:
		if s, ok := d.str(n, path); ok {
			v.SetString(s)
		}
	case reflect.Int, reflect.Int64:
		if i, ok := d.integer(n, path); ok {
			if v.OverflowInt(i) {
				d.errf(n, path, "is too large")
				return
			}
			v.SetInt(i)
		}
	case reflect.Bool:
		if b, ok := d.boolean(n, path); ok {
			v.SetBool(b)
		}
	case reflect.Slice:
		d.slice(n, v, path)
	default:
		panic("config: no decoder for " + v.Type().String())
	}
}

// structure decodes a mapping into a struct whose yaml tags list the allowed
// keys: any other key is refused (moved keys name their new home).
func (d *decoder) structure(n *node, v reflect.Value, path string) {
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping, not %s", describe(n))
		return
	}
	fields := yamlFields(v.Type())
	for _, e := range n.entries {
		kp := joinPath(path, e.key)
		if moved, ok := movedKey(kp); ok {
			d.failed[kp] = true
			d.moved[moved.to] = true
			d.probs.add(e.val.file, e.line, kp, moved.message)
			continue
		}
		f, ok := fields.lookup(e.key)
		if !ok {
			d.failed[kp] = true
			d.probs.add(e.val.file, e.line, kp, unknownKeyMessage(kp, e.key, fields.names()))
			continue
		}
		d.decode(e.val, v.Field(f), kp)
	}
}

// slice decodes a YAML list; null items are refused.
func (d *decoder) slice(n *node, v reflect.Value, path string) {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list, not %s", describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(n.items))
	for i, item := range n.items {
		ip := path + "[" + strconv.Itoa(i) + "]"
		if item.isNull() {
			d.errf(item, ip, "is empty; remove it or give it a value")
			continue
		}
		out = reflect.Append(out, reflect.Zero(v.Type().Elem()))
		d.decode(item, out.Index(out.Len()-1), ip)
	}
	v.Set(out)
}

// str accepts any scalar but a boolean: numbers keep their text (a flavor id
// may look like a number; an unquoted version 1.13 is then refused as a
// version, not as a type).
func (d *decoder) str(n *node, path string) (string, bool) {
	if n.kind != scalarNode || n.tag == "!!bool" {
		d.errf(n, path, "must be a string, not %s", describe(n))
		return "", false
	}
	return n.value, true
}

// integer accepts YAML integers and digit strings ("40"); booleans and other
// strings are refused.
func (d *decoder) integer(n *node, path string) (int64, bool) {
	if n.kind == scalarNode && n.tag == "!!int" {
		var i int64
		y := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: n.value}
		if err := y.Decode(&i); err == nil {
			return i, true
		}
		d.errf(n, path, "is too large")
		return 0, false
	}
	if n.kind == scalarNode && n.tag == "!!str" && isDigits(n.value) {
		i, err := strconv.ParseInt(n.value, 10, 64)
		if err != nil {
			d.errf(n, path, "is too large")
			return 0, false
		}
		return i, true
	}
	if n.tag == "!!bool" {
		d.errf(n, path, "must be an integer, not a boolean (%s)", n.value)
		return 0, false
	}
	d.errf(n, path, "must be an integer, not %s", describe(n))
	return 0, false
}

// boolean accepts YAML booleans, including the unquoted YAML 1.1 words
// (yes/no/on/off) the reference's PyYAML reads as booleans. Quoted strings
// such as "false" are refused: they are truthy strings in the reference.
func (d *decoder) boolean(n *node, path string) (bool, bool) {
	if b, ok := boolValue(n); ok {
		return b, true
	}
	if n.kind == scalarNode && n.tag == "!!str" {
		d.errf(n, path, "must be true or false, not %s (remove the quotes)", describe(n))
		return false, false
	}
	d.errf(n, path, "must be true or false, not %s", describe(n))
	return false, false
}

// boolValue interprets a boolean scalar.
func boolValue(n *node) (bool, bool) {
	yaml11 := n.tag == "!!str" && n.plain && isYAML11Bool(n.value)
	if n.kind != scalarNode || n.tag != "!!bool" && !yaml11 {
		return false, false
	}
	switch strings.ToLower(n.value) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

// isYAML11Bool matches PyYAML's boolean resolver spellings.
func isYAML11Bool(s string) bool {
	switch s {
	case "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}

func (d *decoder) addr(n *node, path string) (netip.Addr, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		d.errf(n, path, "%q is not an IP address", s)
		return netip.Addr{}, false
	}
	return a, true
}

// prefix parses a CIDR; a bare address is a /32 (as Python's ip_network).
func (d *decoder) prefix(n *node, path string) (netip.Prefix, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return netip.Prefix{}, false
	}
	p, err := parsePrefix(s)
	if err != nil {
		d.errf(n, path, "%q is not an IPv4 network (CIDR such as 192.168.0.0/24)", s)
		return netip.Prefix{}, false
	}
	return p, true
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return netip.Prefix{}, fmt.Errorf("not an IPv4 address: %q", s)
		}
		return netip.PrefixFrom(a, 32), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("not an IPv4 network: %q", s)
	}
	return p, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
