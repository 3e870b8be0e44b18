package cli

import (
	"maps"
	"slices"
	"strings"
)

// LookupEnv returns the value of key in environ ("KEY=value" entries); the
// last entry wins, as in os/exec.
func LookupEnv(environ []string, key string) (string, bool) {
	for _, kv := range slices.Backward(environ) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Getenv is LookupEnv without the presence flag.
func Getenv(environ []string, key string) string {
	v, _ := LookupEnv(environ, key)
	return v
}

// WithEnv returns environ with every key of set replaced (or added), each
// exactly once, the added ones sorted by key.
func WithEnv(environ []string, set map[string]string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}
