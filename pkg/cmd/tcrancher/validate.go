package tcrancher

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// keys are the keys of the merged rancher section.
func keys() []string { return []string{"admins", "users", "url", "token"} }

// tiers are the membership lists, in the order they are checked.
func tiers() []string { return []string{"admins", "users"} }

// Validate returns the problems of the merged rancher section raw (RA-1),
// each "key.path: message". An absent section (nil) is valid. It refuses a
// non-mapping section, an unknown key, admins/users that are not lists of
// usernames, a name under both tiers, and url/token that are not non-empty
// strings (an explicit null included).
func Validate(raw any) []string {
	if raw == nil {
		return nil
	}
	sec, ok := raw.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: must be a YAML mapping, not %s", Name, kind(raw))}
	}
	var problems []string
	for _, k := range sortedKeys(sec) {
		if !slices.Contains(keys(), k) {
			problems = append(problems, fmt.Sprintf("%s.%s: unknown key; the rancher plugin uses admins, users, url and token", Name, k))
		}
	}
	members := map[string][]string{}
	for _, tier := range tiers() {
		names, tierProblems := usernames(sec, tier)
		members[tier] = names
		problems = append(problems, tierProblems...)
	}
	var both []string
	for _, n := range members["admins"] {
		if slices.Contains(members["users"], n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		problems = append(problems, fmt.Sprintf("%s.users: listed under both 'admins' and 'users': %s; list each username under exactly one tier", Name, strings.Join(both, ", ")))
	}
	for _, k := range []string{"url", "token"} {
		if v, present := sec[k]; present {
			if s, isString := v.(string); !isString || strings.TrimSpace(s) == "" {
				problems = append(problems, fmt.Sprintf("%s.%s: must be a non-empty string, not %s", Name, k, kind(v)))
			}
		}
	}
	return problems
}

// usernames reads the tier list of sec; null or absent is an empty list.
func usernames(sec map[string]any, tier string) ([]string, []string) {
	v := sec[tier]
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, []string{fmt.Sprintf("%s.%s: must be a list of usernames, not %s", Name, tier, kind(v))}
	}
	var names, problems []string
	for i, item := range list {
		s, isString := item.(string)
		if !isString || strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\r\n") {
			problems = append(problems, fmt.Sprintf("%s.%s[%d]: must be a username (%s.%s is a list of usernames), not %s", Name, tier, i, Name, tier, kind(item)))
			continue
		}
		names = append(names, s)
	}
	return names, problems
}

// Configured reports whether the merged rancher section raw activates the
// plugin: a mapping with a non-empty url and token.
func Configured(raw any) bool {
	sec, ok := raw.(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"url", "token"} {
		if s, isString := sec[k].(string); !isString || strings.TrimSpace(s) == "" {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// kind names the YAML type of v for messages.
func kind(v any) string {
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
