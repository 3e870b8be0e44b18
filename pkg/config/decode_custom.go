package config

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Labels is a freeform label -> value map (tags). Values may be written as
// strings, numbers or booleans; they are stringified the way the reference
// does (Python str(): true -> "True").
type Labels map[string]string

func (l *Labels) decodeNode(d *decoder, n *node, path string) {
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping of label: value, not %s", describe(n))
		return
	}
	out := Labels{}
	for _, e := range n.entries {
		kp := joinPath(path, e.key)
		switch {
		case e.val.isNull():
		case e.val.kind != scalarNode:
			d.errf(e.val, kp, "must be a string, number or boolean, not %s", describe(e.val))
		default:
			out[e.key] = labelValue(e.val)
		}
	}
	*l = out
}

func labelValue(n *node) string {
	if b, ok := boolValue(n); ok {
		if b {
			return "True"
		}
		return "False"
	}
	if n.tag == "!!int" {
		var i int64
		y := yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: n.value}
		if y.Decode(&i) == nil {
			return strconv.FormatInt(i, 10)
		}
	}
	return n.value
}

// Pools are the worker pools in file order.
type Pools []Pool

// Lookup returns the pool called name.
func (p Pools) Lookup(name string) (Pool, bool) {
	for _, pool := range p {
		if pool.Name == name {
			return pool, true
		}
	}
	return Pool{}, false
}

func (p *Pools) decodeNode(d *decoder, n *node, path string) {
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping of pool name: pool, not %s", describe(n))
		return
	}
	out := Pools{}
	for _, e := range n.entries {
		if e.val.isNull() {
			continue
		}
		pool := Pool{Name: e.key}
		d.decode(e.val, reflect.ValueOf(&pool).Elem(), joinPath(path, e.key))
		out = append(out, pool)
	}
	*p = out
}

// Patches are machine-config patches as YAML text. A list item may be a
// YAML string or a mapping/list, which is stored re-serialised.
type Patches []string

func (p *Patches) decodeNode(d *decoder, n *node, path string) {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list of patches, not %s", describe(n))
		return
	}
	out := Patches{}
	for i, item := range n.items {
		ip := path + "[" + strconv.Itoa(i) + "]"
		switch {
		case item.kind == scalarNode && item.tag == "!!str":
			if _, err := parseAllYAML([]byte(item.value)); err != nil {
				d.errf(item, ip, "is not valid YAML: %v", err)
				continue
			}
			out = append(out, item.value)
		case item.kind == mapNode || item.kind == seqNode:
			text, err := yaml.Marshal(jsonValue(item))
			if err != nil {
				d.errf(item, ip, "cannot be written as YAML: %v", err)
				continue
			}
			out = append(out, string(text))
		default:
			d.errf(item, ip, "must be a YAML string or mapping, not %s", describe(item))
		}
	}
	*p = out
}

// parseAllYAML checks every document of a multi-document YAML text.
func parseAllYAML(data []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errYAMLPanic(r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

func (r *AddrRange) decodeNode(d *decoder, n *node, path string) {
	s, ok := d.str(n, path)
	if !ok {
		return
	}
	lo, hi, found := strings.Cut(s, "-")
	start, err1 := netip.ParseAddr(strings.TrimSpace(lo))
	end, err2 := netip.ParseAddr(strings.TrimSpace(hi))
	if !found || err1 != nil || err2 != nil || !start.Is4() || !end.Is4() {
		d.errf(n, path, "%q must be an IPv4 range start-end, e.g. 203.0.113.75-203.0.113.78", s)
		return
	}
	if end.Less(start) {
		d.errf(n, path, "%q ends before it starts", s)
		return
	}
	*r = AddrRange{Start: start, End: end}
}

func (t *TLSVerify) decodeNode(d *decoder, n *node, path string) {
	if b, ok := boolValue(n); ok {
		*t = TLSVerify{Insecure: !b}
		return
	}
	if n.kind != scalarNode || n.tag != "!!str" {
		d.errf(n, path, "must be true, false or a CA-bundle path, not %s", describe(n))
		return
	}
	switch strings.ToLower(strings.TrimSpace(n.value)) {
	case "":
		d.errf(n, path, "must be true, false or a CA-bundle path, not an empty string")
	case "true", "false", "yes", "no", "on", "off":
		d.errf(n, path, "is the string %q; write true or false without quotes (or give a CA-bundle path)", n.value)
	default:
		*t = TLSVerify{CABundle: n.value}
	}
}
