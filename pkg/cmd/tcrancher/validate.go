package tcrancher

import (
	"net/url"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/plugin/pluginconfig"
)

// keys are the keys of the merged rancher section.
func keys() []string { return []string{"admins", "users", "url", "allow_http", "token", "ca_file"} }

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
// usernames, a name under both tiers, url/token that are not non-empty
// strings (an explicit null included), a url that is not http(s), and an
// http url unless allow_http is true: the token would travel in clear, and
// a ca_file that is not a path.
func Validate(raw any) []string {
	var p pluginconfig.Problems
	sec := p.Mapping(Name, raw)
	if sec == nil {
		return p
	}
	p.Unknown(sec, Name, keys(), "unknown key; the rancher plugin uses admins, users, url, allow_http, token and ca_file")
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
	p.Boolean(sec, Name, "allow_http")
	if v, ok := sec["ca_file"]; ok {
		if s, isString := v.(string); !isString || !pluginconfig.NonEmpty(s) {
			p.Add(Name+".ca_file", "must be the path of a PEM CA bundle (relative to the cluster directory), not %v", v)
		}
	}
	if raw, ok := sec["url"].(string); ok && pluginconfig.NonEmpty(raw) {
		serverURL(&p, raw, sec["allow_http"] == true)
	}
	return p
}

// serverURL checks rancher.url, where the token is sent: an https URL with
// a host, or http only with allow_http: true.
func serverURL(p *pluginconfig.Problems, raw string, allowHTTP bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		p.Add(Name+".url", "%q is not an http(s) URL such as https://rancher.example.edu", raw)
	case u.Scheme == "http" && !allowHTTP:
		p.Add(Name+".url", "%q is plain http: the Rancher token would cross the network unencrypted; use https://, or set %s.allow_http: true to accept that (a loopback lab)", raw, Name)
	}
}

// Configured reports whether the merged rancher section raw activates the
// plugin: a mapping with a non-empty url and token.
func Configured(raw any) bool {
	sec, ok := raw.(map[string]any)
	return ok && pluginconfig.NonEmpty(sec["url"]) && pluginconfig.NonEmpty(sec["token"])
}
