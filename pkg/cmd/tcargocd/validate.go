package tcargocd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// topKeys are the keys of the merged argocd section: cluster.yaml's options
// and secrets.yaml's apply target and git credentials.
func topKeys() []string {
	return []string{
		"admins", "users", "git", "infra", "sync", "automated",
		"metallb", "ingress", "sealedsecrets", "certmanager", "cinder", "nfs", "monitoring",
		"kubeconfig", "context", "url", "token",
	}
}

// appKeys are the keys each per-app section accepts. "version" is listed for
// every app so that a version the plugin would not forward gets its own
// message rather than "unsupported key".
func appKeys() map[string][]string {
	return map[string][]string{
		"metallb":       {"enabled", "version"},
		"sealedsecrets": {"enabled", "version"},
		"certmanager":   {"enabled", "version", "email"},
		"cinder":        {"enabled", "version"},
		"ingress":       {"enabled", "class", "traefik", "version"},
		"nfs":           {"enabled", "servers", "version"},
		"monitoring":    {"enabled", "version"},
	}
}

// versionForwarded are the apps whose version reaches the rendered chart.
func versionForwarded() []string {
	return []string{"metallb", "sealedsecrets", "certmanager", "cinder"}
}

// problems collects "key.path: message" lines.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

// Validate returns the problems of the merged argocd section raw (AR-2), each
// "key.path: message". An absent section (nil) is valid. Null sub-sections
// and null member lists read as absent; a null where a scalar is expected is
// refused like any other non-string or non-boolean.
func Validate(raw any) []string {
	if raw == nil {
		return nil
	}
	sec, ok := raw.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: must be a YAML mapping, not %s", Name, kind(raw))}
	}
	var p problems
	for _, k := range sortedKeys(sec) {
		if !slices.Contains(topKeys(), k) {
			p.add(Name+"."+k, "unsupported option; the argocd plugin does not use it")
		}
	}
	for _, tier := range []string{"admins", "users"} {
		p.emails(sec, tier)
	}
	for _, k := range []string{"sync", "automated"} {
		p.boolean(sec, Name, k)
	}
	for _, k := range []string{"kubeconfig", "context", "url", "token"} {
		p.str(sec, Name, k)
	}
	git := p.mapping(sec, Name, "git", []string{"url", "username", "token"})
	for _, k := range []string{"url", "username", "token"} {
		p.str(git, Name+".git", k)
	}
	infra := p.mapping(sec, Name, "infra", []string{"url"})
	p.str(infra, Name+".infra", "url")
	for _, app := range slices.Sorted(maps.Keys(appKeys())) {
		if m := p.mapping(sec, Name, app, appKeys()[app]); m != nil {
			p.app(app, m)
		}
	}
	p.repositories(git, infra)
	return p
}

// repositories checks that git.url and infra.url come together and that git
// credentials have a URL to go with.
func (p *problems) repositories(git, infra map[string]any) {
	gitURL, infraURL := nonEmpty(git["url"]), nonEmpty(infra["url"])
	switch {
	case gitURL && !infraURL:
		p.add(Name+".infra.url", "must be set together with argocd.git.url; the repository Secret, root Application and cluster Application are only rendered together")
	case infraURL && !gitURL:
		p.add(Name+".git.url", "must be set together with argocd.infra.url; the repository Secret, root Application and cluster Application are only rendered together")
	}
	if !gitURL && (nonEmpty(git["username"]) || nonEmpty(git["token"])) {
		p.add(Name+".git", "git credentials are set but argocd.git.url is not, so no repository Secret can be rendered; set argocd.git.url or remove the credentials")
	}
}

// app checks one per-app section.
func (p *problems) app(app string, m map[string]any) {
	path := Name + "." + app
	p.boolean(m, path, "enabled")
	if v, present := m["version"]; present {
		if !slices.Contains(versionForwarded(), app) {
			p.add(path+".version", "the plugin does not forward a chart version for this app; set version under argocd.metallb, argocd.sealedsecrets, argocd.certmanager, argocd.cinder, or argocd.ingress.traefik, or remove the key")
		} else if !nonEmpty(v) {
			p.add(path+".version", "must be a non-empty string, not %s", kind(v))
		}
	}
	switch app {
	case "certmanager":
		if v, present := m["email"]; present {
			if s, ok := v.(string); !ok || !isEmail(s) {
				p.add(path+".email", "must be an email address, not %s", kind(v))
			}
		}
	case "ingress":
		if v, present := m["class"]; present && !nonEmpty(v) {
			p.add(path+".class", "must be a non-empty string, not %s", kind(v))
		}
		if t := p.mapping(m, path, "traefik", []string{"version"}); t != nil {
			if v, present := t["version"]; present && !nonEmpty(v) {
				p.add(path+".traefik.version", "must be a non-empty string, not %s", kind(v))
			}
		}
	case "nfs":
		if v := m["servers"]; v != nil {
			servers, ok := v.(map[string]any)
			valid := ok
			for _, s := range servers {
				if _, isMap := s.(map[string]any); !isMap {
					valid = false
				}
			}
			if !valid {
				p.add(path+".servers", "must map server names to mappings")
			}
		}
	}
}

// mapping checks that parent[key], when present and not null, is a mapping
// with only allowed keys, and returns it (nil when absent or invalid).
func (p *problems) mapping(parent map[string]any, path, key string, allowed []string) map[string]any {
	v := parent[key]
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.add(path+"."+key, "must be a YAML mapping, not %s", kind(v))
		return nil
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			p.add(path+"."+key+"."+k, "unsupported key; %s.%s takes %s", path, key, strings.Join(allowed, ", "))
		}
	}
	return m
}

// boolean refuses a present m[key] that is not a YAML boolean (a quoted
// "false" included).
func (p *problems) boolean(m map[string]any, path, key string) {
	if v, present := m[key]; present {
		if _, ok := v.(bool); !ok {
			p.add(path+"."+key, "must be true or false, not %s", kind(v))
		}
	}
}

// str refuses a present m[key] that is not a string.
func (p *problems) str(m map[string]any, path, key string) {
	if v, present := m[key]; present {
		if _, ok := v.(string); !ok {
			p.add(path+"."+key, "must be a string, not %s", kind(v))
		}
	}
}

// emails checks the member list sec[tier]: a list of email addresses.
func (p *problems) emails(sec map[string]any, tier string) {
	v := sec[tier]
	if v == nil {
		return
	}
	path := Name + "." + tier
	list, ok := v.([]any)
	if !ok {
		p.add(path, "must be a list of email addresses, not %s", kind(v))
		return
	}
	for i, item := range list {
		if s, isString := item.(string); !isString || !isEmail(s) {
			p.add(fmt.Sprintf("%s[%d]", path, i), "must be an email address (%s is a list of email addresses), not %s", path, kind(item))
		}
	}
}

// Configured reports whether the merged argocd section raw activates the
// plugin (AR-1): a kubeconfig or a context to apply with. url/token alone do
// not: the plugin applies through kubectl, not the ArgoCD API.
func Configured(raw any) bool {
	sec, ok := raw.(map[string]any)
	return ok && (nonEmpty(sec["kubeconfig"]) || nonEmpty(sec["context"]))
}

// isEmail is a deliberately loose address check: one "@", a non-empty local
// part, a dotted domain, no spaces.
func isEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && !strings.ContainsAny(s, " \t\r\n") && !strings.Contains(domain, "@") &&
		strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// nonEmpty reports whether v is a string with something besides spaces.
func nonEmpty(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) != ""
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
