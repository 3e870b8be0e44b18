package openstack

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Time formats of the services (each parses its own).
const (
	timeNova     = "2006-01-02T15:04:05Z"
	timeKeystone = "2006-01-02T15:04:05.000000Z"
	timeCinder   = "2006-01-02T15:04:05.000000"
)

// maxBody bounds JSON request bodies (Nova's own limit is 112 KiB; user
// data alone may be 64 KiB).
const maxBody = 1 << 20

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// newHexID is a Keystone-style id (32 hex digits, no dashes).
func newHexID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // Python's json does not escape <, > and &
		_ = enc.Encode(v)
	}
}

// readJSON decodes the request body into a generic object.
func readJSON(r *http.Request) (map[string]any, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("malformed request body: %w", err)
	}
	return m, nil
}

// neutronSpec reads a Neutron request body {"<key>": {...}} and returns the
// inner object; anything else is Neutron's 400.
func neutronSpec(r *http.Request, key string) (map[string]any, *apiError) {
	body, err := readJSON(r)
	spec := obj(body, key)
	if err != nil || spec == nil {
		return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Resource body required")
	}
	return spec, nil
}

// decodeBody decodes the request body into v.
func decodeBody(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		return fmt.Errorf("malformed request body: %w", err)
	}
	return nil
}

// obj returns m[key] as an object (nil when absent or not an object).
func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// boolOr returns m[key] as a bool (JSON bool or "true"/"false"), or def.
func boolOr(m map[string]any, key string, def bool) bool {
	switch v := m[key].(type) {
	case bool:
		return v
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return def
}

// intOr returns m[key] as an int (JSON number or numeric string), or def.
func intOr(m map[string]any, key string, def int) int {
	switch v := m[key].(type) {
	case float64:
		return int(v)
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// strList returns m[key] as a list of strings (ok=false if not a list of strings).
func strList(m map[string]any, key string) ([]string, bool) {
	raw, present := m[key]
	if !present || raw == nil {
		return nil, true
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// queryList returns every value of a comma-separated query parameter.
func queryList(r *http.Request, key string) []string {
	var out []string
	for _, v := range r.URL.Query()[key] {
		for p := range strings.SplitSeq(v, ",") {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// tagsMatch applies the tags/tags-any/not-tags/not-tags-any filters shared
// by Nova and Neutron.
func tagsMatch(r *http.Request, have []string) bool {
	hasAll := func(want []string) bool {
		for _, t := range want {
			if !slices.Contains(have, t) {
				return false
			}
		}
		return true
	}
	hasAny := func(want []string) bool {
		return slices.ContainsFunc(want, func(t string) bool { return slices.Contains(have, t) })
	}
	if t := queryList(r, "tags"); len(t) > 0 && !hasAll(t) {
		return false
	}
	if t := queryList(r, "tags-any"); len(t) > 0 && !hasAny(t) {
		return false
	}
	if t := queryList(r, "not-tags"); len(t) > 0 && hasAll(t) {
		return false
	}
	if t := queryList(r, "not-tags-any"); len(t) > 0 && hasAny(t) {
		return false
	}
	return true
}

// sortedTags returns a sorted, duplicate-free copy.
func sortedTags(tags []string) []string {
	out := append([]string{}, tags...)
	slices.Sort(out)
	return slices.Compact(out)
}

// paginate applies limit/marker over ids (in display order) and reports
// whether a next page exists.
func paginate[T any](r *http.Request, items []T, id func(T) string) (page []T, next string) {
	q := r.URL.Query()
	if m := q.Get("marker"); m != "" {
		idx := slices.IndexFunc(items, func(t T) bool { return id(t) == m })
		if idx >= 0 {
			items = items[idx+1:]
		}
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 || limit >= len(items) {
		return items, ""
	}
	return items[:limit], id(items[limit-1])
}

// nextLink returns the URL of the next page of r after marker.
func nextLink(base string, r *http.Request, marker string) string {
	q := r.URL.Query()
	q.Set("marker", marker)
	return base + r.URL.Path + "?" + q.Encode()
}

func fmtTime(t time.Time, layout string) string { return t.UTC().Format(layout) }

// strOr returns m[key] as a string if present, else def.
func strOr(m map[string]any, key, def string) string {
	if v, ok := m[key].(string); ok {
		return v
	}
	return def
}

// keys returns the sorted keys of a view.
func keys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
