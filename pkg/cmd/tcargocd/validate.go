package tcargocd

import (
	"maps"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/plugin/pluginconfig"
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

// problems collects "key.path: message" lines; its methods are the checks
// only argocd makes.
type problems struct{ pluginconfig.Problems }

// emails are what admins and users list.
func emails() pluginconfig.Items {
	return pluginconfig.Items{One: "an email address", Many: "email addresses", Valid: isEmail}
}

// Validate returns the problems of the merged argocd section raw (AR-2), each
// "key.path: message". An absent section (nil) is valid. Null sub-sections
// and null member lists read as absent; a null where a scalar is expected is
// refused like any other non-string or non-boolean.
func Validate(raw any) []string {
	var p problems
	sec := p.Mapping(Name, raw)
	if sec == nil {
		return p.Problems
	}
	p.Unknown(sec, Name, topKeys(), "unsupported option; the argocd plugin does not use it")
	for _, tier := range []string{"admins", "users"} {
		p.Strings(sec, Name, tier, emails())
	}
	for _, k := range []string{"sync", "automated"} {
		p.Boolean(sec, Name, k)
	}
	for _, k := range []string{"kubeconfig", "context", "url", "token"} {
		p.String(sec, Name, k)
	}
	git := p.mapping(sec, Name, "git", []string{"url", "username", "token"})
	for _, k := range []string{"url", "username", "token"} {
		p.String(git, Name+".git", k)
	}
	infra := p.mapping(sec, Name, "infra", []string{"url"})
	p.String(infra, Name+".infra", "url")
	for _, app := range slices.Sorted(maps.Keys(appKeys())) {
		if m := p.mapping(sec, Name, app, appKeys()[app]); m != nil {
			p.app(app, m)
		}
	}
	p.repositories(git, infra)
	return p.Problems
}

// repositories checks that git.url and infra.url come together and that git
// credentials have a URL to go with.
func (p *problems) repositories(git, infra map[string]any) {
	gitURL, infraURL := pluginconfig.NonEmpty(git["url"]), pluginconfig.NonEmpty(infra["url"])
	switch {
	case gitURL && !infraURL:
		p.Add(Name+".infra.url", "must be set together with argocd.git.url; the repository Secret, root Application and cluster Application are only rendered together")
	case infraURL && !gitURL:
		p.Add(Name+".git.url", "must be set together with argocd.infra.url; the repository Secret, root Application and cluster Application are only rendered together")
	}
	if !gitURL && (pluginconfig.NonEmpty(git["username"]) || pluginconfig.NonEmpty(git["token"])) {
		p.Add(Name+".git", "git credentials are set but argocd.git.url is not, so no repository Secret can be rendered; set argocd.git.url or remove the credentials")
	}
}

// app checks one per-app section.
func (p *problems) app(app string, m map[string]any) {
	path := Name + "." + app
	p.Boolean(m, path, "enabled")
	if _, present := m["version"]; present && !slices.Contains(versionForwarded(), app) {
		p.Add(path+".version", "the plugin does not forward a chart version for this app; set version under argocd.metallb, argocd.sealedsecrets, argocd.certmanager, argocd.cinder, or argocd.ingress.traefik, or remove the key")
	} else {
		p.NonEmptyString(m, path, "version")
	}
	switch app {
	case "certmanager":
		if v, present := m["email"]; present {
			if s, ok := v.(string); !ok || !isEmail(s) {
				p.Add(path+".email", "must be an email address, not %s", pluginconfig.Kind(v))
			}
		}
	case "ingress":
		p.NonEmptyString(m, path, "class")
		traefik := p.mapping(m, path, "traefik", []string{"version"})
		p.NonEmptyString(traefik, path+".traefik", "version")
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
				p.Add(path+".servers", "must map server names to mappings")
			}
		}
	}
}

// mapping checks that parent[key], when present and not null, is a mapping
// with only allowed keys, and returns it (nil when absent or invalid).
func (p *problems) mapping(parent map[string]any, path, key string, allowed []string) map[string]any {
	path += "." + key
	m := p.Mapping(path, parent[key])
	p.Unknown(m, path, allowed, "unsupported key; "+path+" takes "+strings.Join(allowed, ", "))
	return m
}

// Configured reports whether the merged argocd section raw activates the
// plugin (AR-1): a kubeconfig or a context to apply with. url/token alone do
// not: the plugin applies through kubectl, not the ArgoCD API.
func Configured(raw any) bool {
	sec, ok := raw.(map[string]any)
	return ok && (pluginconfig.NonEmpty(sec["kubeconfig"]) || pluginconfig.NonEmpty(sec["context"]))
}

// isEmail is a deliberately loose address check: one "@", a non-empty local
// part, a dotted domain, no spaces.
func isEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && !strings.ContainsAny(s, " \t\r\n") && !strings.Contains(domain, "@") &&
		strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}
