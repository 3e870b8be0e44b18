package configdiff

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Redact returns a multi-document machine configuration with every secret
// replaced by a "<redacted:xxxxxxxx>" marker (a keyed digest: equal values
// get equal markers within one call), comments dropped and documents
// re-encoded with four-space indentation, separated by "---".
//
// What is redacted, at any depth and in any document:
//   - the value of a key named like a credential: containing key, secret,
//     token, password, passwd, passphrase or credential, or the word auth,
//     authorization, pass or cookie (any case); a mapping or list under such
//     a key is redacted leaf by leaf;
//   - the value of content/contents keys: machine.files contents, inline
//     manifests, extension service config files;
//   - the value of a {name: <credential-like>, value: ...} pair (container env);
//   - NAME=value and --flag=value assignments inside strings whose name is
//     credential-like (SECRET_KEY=, PASSWORD=, TS_AUTHKEY=, --token=) or
//     whose value is secret-shaped; empty values (TS_EXTRA_ARGS=) are shown;
//   - secret-shaped strings anywhere: PEM blocks other than certificates and
//     public keys, base64 blobs, long mixed-case alphanumeric runs, padded
//     base64 tails, hex strings of 32+ digits, URLs with a password, and
//     multi-line text with credential-like "name: value" or "NAME=value" lines.
//
// Besides, every occurrence of a value in known (the values of
// secrets.yaml, config.Cluster.RevealSecretValues) is replaced by its
// marker, whatever its key and wherever it stands in a string: a patch
// value under an unusual name (DB_PW) is hidden when it came from
// secrets.yaml.
//
// Certificates stay readable: values of crt/ca/cert/certificate(s) keys
// (machine.ca.crt, registry tls.ca) are kept unless they hold private key
// material. Booleans, nulls and empty strings are never hidden.
func Redact(config []byte, known ...string) ([]byte, error) {
	r := newRedactor(config).knowing(known)
	roots, err := r.parse(config)
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	for i, root := range roots {
		text, err := encode(root)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString(text)
	}
	return []byte(out.String()), nil
}

// redactor masks secrets in parsed documents.
type redactor struct {
	key    []byte
	shapes *shapes
	// known replaces every known secret value by its marker (nil: none).
	known *strings.Replacer
	// visited records the contexts a node was redacted in, so a node
	// reached again through an alias is not walked twice (alias bombs).
	visited map[visit]bool
}

// visit is a node in the context it is redacted in.
type visit struct {
	node *yaml.Node
	key  string
	hide bool
}

// newRedactor keys the markers on the inputs of one call: the digest of a
// secret is consistent across both sides of a diff, and unguessable
// without the full inputs (which hold far more entropy than any secret).
func newRedactor(inputs ...[]byte) *redactor {
	h := sha256.New()
	h.Write([]byte("talosc configdiff marker key v1\x00"))
	for _, in := range inputs {
		h.Write([]byte(strconv.Itoa(len(in)) + ":"))
		h.Write(in)
	}
	return &redactor{key: h.Sum(nil), shapes: newShapes(), visited: map[visit]bool{}}
}

// knowing makes r replace every occurrence of a value in known by its
// marker, longest first (a secret that holds another is replaced whole).
func (r *redactor) knowing(known []string) *redactor {
	values := slices.Clone(known)
	values = slices.DeleteFunc(values, func(v string) bool { return v == "" })
	if len(values) == 0 {
		return r
	}
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range slices.Compact(values) {
		pairs = append(pairs, v, r.mark(v))
	}
	r.known = strings.NewReplacer(pairs...)
	return r
}

// maskKnown replaces the known secrets in a scalar (a key or a value).
func (r *redactor) maskKnown(v *yaml.Node) {
	if r.known == nil || v.Kind != yaml.ScalarNode {
		return
	}
	if out := r.known.Replace(v.Value); out != v.Value {
		v.Value, v.Tag, v.Style = out, "!!str", 0
	}
}

// mark is the marker a secret value is replaced with.
func (r *redactor) mark(value string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(value))
	return "<redacted:" + hex.EncodeToString(m.Sum(nil)[:4]) + ">"
}

func (r *redactor) redact(root *yaml.Node) { r.walk(root, false) }

// marked reports a scalar that already holds a marker.
func (r *redactor) marked(v *yaml.Node) bool {
	hexPart, ok := strings.CutPrefix(v.Value, "<redacted:")
	hexPart, ok2 := strings.CutSuffix(hexPart, ">")
	if v.Kind != yaml.ScalarNode || !ok || !ok2 || len(hexPart) != 8 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// walk redacts a collection; hidden means every scalar leaf below is a
// secret (the collection hangs off a credential-like key).
func (r *redactor) walk(n *yaml.Node, hidden bool) {
	switch n.Kind {
	case yaml.MappingNode:
		r.mapping(n, hidden)
	case yaml.SequenceNode:
		for _, item := range n.Content {
			r.value(item, "", hidden)
		}
	case yaml.ScalarNode, yaml.AliasNode:
		r.value(n, "", hidden)
	case yaml.DocumentNode:
	}
}

func (r *redactor) mapping(m *yaml.Node, hidden bool) {
	// {name: PASSWORD, value: ...}: a Kubernetes env entry in a static pod.
	secretPair := secretName(scalarValue(m, "name"))
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := k.Value
		r.maskKnown(k)
		if k.Kind == yaml.ScalarNode && r.shapes.secret(k.Value) {
			k.Value, k.Tag, k.Style = r.mark(k.Value), "!!str", 0
		}
		hide := hidden || secretName(name) || contentKey(name) || secretPair && name == "value"
		r.value(v, name, hide)
	}
}

// value redacts the value of key (or a list item when key is "").
func (r *redactor) value(v *yaml.Node, key string, hide bool) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias // the shared anchored node, redacted in place
	}
	at := visit{node: v, key: key, hide: hide}
	if r.visited[at] || r.marked(v) {
		return
	}
	r.visited[at] = true
	if v.Kind != yaml.ScalarNode {
		r.walk(v, hide)
		return
	}
	r.maskKnown(v)
	switch {
	case hide:
		r.hide(v)
	case certKey(key):
		// no shape rules: certificates are base64 and PEM by nature
		if rest, private := r.shapes.stripPEM(v.Value); private || r.shapes.privateKey(v.Value) || r.shapes.credentialLines(rest) {
			r.hide(v)
		}
	default:
		r.scan(v)
	}
}

// hide replaces a scalar with its marker; booleans, nulls and empty strings
// carry no secret and stay as they are.
func (r *redactor) hide(v *yaml.Node) {
	if v.Value == "" || v.Tag == "!!bool" || v.Tag == "!!null" {
		return
	}
	v.Value, v.Tag, v.Style = r.mark(v.Value), "!!str", 0
}

// scan redacts credential assignments inside a string, then the whole
// string if what is left still looks like a secret.
func (r *redactor) scan(v *yaml.Node) {
	switch v.Tag {
	case "!!int", "!!float", "!!bool", "!!null":
		return
	}
	out := r.shapes.assignments(v.Value, r.mark)
	if r.shapes.secret(out) {
		r.hide(v)
		return
	}
	v.Value = out
}

// secretName reports a credential-like key or variable name.
func secretName(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range []string{"key", "secret", "token", "password", "passwd", "passphrase", "credential"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	for _, w := range words(name) {
		switch strings.ToLower(w) {
		case "auth", "authorization", "pass", "cookie":
			return true
		}
	}
	return false
}

// words splits a name into words at every character outside [A-Za-z0-9]
// and at camelCase humps: basicAuth → basic, Auth.
func words(name string) []string {
	var out []string
	start := -1
	for i, c := range name {
		alnum := asciiLower(c) || asciiUpper(c) || c >= '0' && c <= '9'
		hump := asciiUpper(c) && i > 0 && asciiLower(rune(name[i-1]))
		switch {
		case !alnum:
			if start >= 0 {
				out = append(out, name[start:i])
			}
			start = -1
		case hump && start >= 0:
			out = append(out, name[start:i])
			start = i
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		out = append(out, name[start:])
	}
	return out
}

// asciiLower reports a letter a to z.
func asciiLower(c rune) bool { return c >= 'a' && c <= 'z' }

// asciiUpper reports a letter A to Z.
func asciiUpper(c rune) bool { return c >= 'A' && c <= 'Z' }

// contentKey names the bodies of machine.files, inline manifests and
// extension service config files.
func contentKey(name string) bool { return name == "content" || name == "contents" }

// certKey names certificate values, which stay readable.
func certKey(name string) bool {
	switch strings.ToLower(name) {
	case "crt", "ca", "cert", "certs", "certificate", "certificates":
		return true
	}
	return false
}
