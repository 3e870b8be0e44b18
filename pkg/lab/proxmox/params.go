package proxmox

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxParamBody bounds a JSON or form request body (pveproxy's own limit is
// far smaller than anything talosc sends; upload bodies are handled apart).
const maxParamBody = 1 << 20

// params are the parameters of one API call: the query string merged with
// a JSON or urlencoded body, as pveproxy merges them, plus the path
// parameters. Values are kept as PVE receives them: strings.
type params struct {
	v url.Values
}

// readParams parses the query and (for POST/PUT/DELETE) the body.
func readParams(r *http.Request) (params, error) {
	v := r.URL.Query()
	if r.Body == nil || r.Method == http.MethodGet {
		return params{v}, nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxParamBody))
		if err != nil {
			return params{}, fmt.Errorf("read body: %w", err)
		}
		if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
			return params{v}, nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return params{}, &apiError{status: http.StatusBadRequest, message: "unable to parse JSON body: " + err.Error()}
		}
		for k, msg := range m {
			vals, err := jsonValues(msg)
			if err != nil {
				return params{}, paramErr1(k, "%v", err)
			}
			if vals != nil {
				v[k] = vals
			}
		}
	case "application/x-www-form-urlencoded":
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxParamBody))
		if err != nil {
			return params{}, fmt.Errorf("read body: %w", err)
		}
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return params{}, &apiError{status: http.StatusBadRequest, message: "unable to parse form body"}
		}
		maps.Copy(v, form)
	}
	return params{v}, nil
}

// jsonValues turns one JSON value into PVE's string form: numbers as
// written, booleans as 1/0, arrays as repeated values; null means absent.
func jsonValues(msg json.RawMessage) ([]string, error) {
	var x any
	dec := json.NewDecoder(strings.NewReader(string(msg)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("invalid JSON value: %w", err)
	}
	one := func(x any) (string, error) {
		switch t := x.(type) {
		case string:
			return t, nil
		case json.Number:
			return t.String(), nil
		case bool:
			if t {
				return "1", nil
			}
			return "0", nil
		default:
			return "", fmt.Errorf("type check ('string') failed - got %T", x)
		}
	}
	switch t := x.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, err := one(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	default:
		s, err := one(t)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
}

func (p params) has(k string) bool   { return len(p.v[k]) > 0 }
func (p params) str(k string) string { return p.v.Get(k) }
func (p params) set(k, val string)   { p.v.Set(k, val) }

// keys returns the parameter names, sorted.
func (p params) keys() []string {
	out := make([]string, 0, len(p.v))
	for k := range p.v {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// schema is the set of parameters an endpoint accepts: exact names plus
// families such as net\d+.
type schema struct {
	names    []string
	families []*regexp.Regexp
	required []string
}

func (s schema) allows(k string) bool {
	if slices.Contains(s.names, k) {
		return true
	}
	for _, f := range s.families {
		if f.MatchString(k) {
			return true
		}
	}
	return false
}

// check enforces additionalProperties => 0 and required parameters, like
// PVE's JSONSchema validation.
func (p params) check(s schema) error {
	errs := map[string]string{}
	for k := range p.v {
		if !s.allows(k) {
			errs[k] = "property is not defined in schema and the schema does not allow additional properties"
		}
	}
	for _, k := range s.required {
		if !p.has(k) {
			errs[k] = "property is missing and it is not optional"
		}
	}
	if len(errs) > 0 {
		return paramErr(errs)
	}
	return nil
}

var (
	trueRe  = regexp.MustCompile(`(?i)^(1|true|yes|on)$`)
	falseRe = regexp.MustCompile(`(?i)^(0|false|no|off)$`)
	intRe   = regexp.MustCompile(`^[+-]?\d+$`)
)

// boolean parses a PVE boolean parameter; absent is def.
func (p params) boolean(k string, def bool) (bool, error) {
	if !p.has(k) {
		return def, nil
	}
	return parseBool(k, p.str(k))
}

func parseBool(k, v string) (bool, error) {
	switch {
	case trueRe.MatchString(v):
		return true, nil
	case falseRe.MatchString(v):
		return false, nil
	}
	return false, paramErr1(k, "type check ('boolean') failed - got '%s'", v)
}

// integer parses a PVE integer parameter; absent is def.
func (p params) integer(k string, def int) (int, error) {
	if !p.has(k) {
		return def, nil
	}
	return parseInt(k, p.str(k))
}

func parseInt(k, v string) (int, error) {
	if !intRe.MatchString(v) {
		return 0, paramErr1(k, "type check ('integer') failed - got '%s'", v)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, paramErr1(k, "type check ('integer') failed - got '%s'", v)
	}
	return n, nil
}

// normBool stores a boolean the way PVE's config files do: 1 or 0.
func normBool(k, v string) (string, error) {
	b, err := parseBool(k, v)
	if err != nil {
		return "", err
	}
	if b {
		return "1", nil
	}
	return "0", nil
}

// typed converts stored string values to JSON numbers for the keys whose
// schema type is integer or boolean (PVE emits those as numbers).
func typed(m map[string]string, numeric func(string) bool) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = typedValue(k, v, numeric)
	}
	return out
}

func typedValue(k, v string, numeric func(string) bool) any {
	if numeric(k) {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
}

// splitList splits PVE's list parameters (delete=a,b;c d).
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\x00' })
}

// propString parses "a,b=c,d=e" (the first bare value keyed by firstKey).
func propString(s, firstKey string) (map[string]string, []string) {
	out := map[string]string{}
	var order []string
	for i, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok && i == 0 && firstKey != "" {
			k, v = firstKey, part
		}
		out[k] = v
		order = append(order, k)
	}
	return out, order
}
