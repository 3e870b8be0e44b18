package tcrancher

import (
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/plugin/pluginconfig"
)

// keys are the keys of the merged rancher section.
func keys() []string { return []string{"admins", "users", "url", "token"} }

// tiers are the membership lists, in the order they are checked.
func tiers() []string { return []string{"admins", "users"} }

// usernames are what a tier lists: names without spaces.
func usernames() pluginconfig.Items {
	return pluginconfig.Items{
		One:  "a username",
		Many: "usernames",
		Valid: func(s string) bool {
			return strings.TrimSpace(s) != "" && !strings.ContainsAny(s, " \t\r\n")
		},
	}
}

// Validate returns the problems of the merged rancher section raw (RA-1),
// each "key.path: message". An absent section (nil) is valid. It refuses a
// non-mapping section, an unknown key, admins/users that are not lists of
// usernames, a name under both tiers, and url/token that are not non-empty
// strings (an explicit null included).
func Validate(raw any) []string {
	var p pluginconfig.Problems
	sec := p.Mapping(Name, raw)
	if sec == nil {
		return p
	}
	p.Unknown(sec, Name, keys(), "unknown key; the rancher plugin uses admins, users, url and token")
	members := map[string][]string{}
	for _, tier := range tiers() {
		members[tier] = p.Strings(sec, Name, tier, usernames())
	}
	var both []string
	for _, n := range members["admins"] {
		if slices.Contains(members["users"], n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		p.Add(Name+".users", "listed under both 'admins' and 'users': %s; list each username under exactly one tier", strings.Join(both, ", "))
	}
	for _, k := range []string{"url", "token"} {
		p.NonEmptyString(sec, Name, k)
	}
	return p
}

// Configured reports whether the merged rancher section raw activates the
// plugin: a mapping with a non-empty url and token.
func Configured(raw any) bool {
	sec, ok := raw.(map[string]any)
	return ok && pluginconfig.NonEmpty(sec["url"]) && pluginconfig.NonEmpty(sec["token"])
}
