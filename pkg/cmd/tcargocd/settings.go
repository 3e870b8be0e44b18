package tcargocd

import (
	"path/filepath"
	"slices"

	"github.com/talosc/talosc/pkg/config"
)

// settings are the merged argocd section, read after Validate accepted it.
type settings struct {
	// cluster is the cluster's name (cluster.yaml name).
	cluster string
	// admins and users are the AppProject roles' groups: argocd's lists
	// merged with rancher's (spec §4.3), each once, in order.
	admins, users []string
	// gitURL and infraURL come together (AR-2); empty: no repository
	// Secret and no Applications.
	gitURL, gitUsername, gitToken, infraURL string
	sync, automated                         bool
	// apps are the per-app sections (metallb, ingress, ...).
	apps map[string]map[string]any
	// kubeconfig (absolute) and kubeContext are the management cluster's
	// apply target (AR-1).
	kubeconfig, kubeContext string
}

// readSettings reads the merged argocd section raw of cfg, which Validate
// accepted. A relative argocd.kubeconfig is relative to the cluster
// directory.
func readSettings(cfg *config.Cluster, raw any) settings {
	sec, _ := raw.(map[string]any)
	git, _ := sec["git"].(map[string]any)
	infra, _ := sec["infra"].(map[string]any)
	s := settings{
		cluster:     cfg.Name,
		gitURL:      str(git["url"]),
		gitUsername: str(git["username"]),
		gitToken:    str(git["token"]),
		infraURL:    str(infra["url"]),
		sync:        flag(sec["sync"], false),
		automated:   flag(sec["automated"], true),
		apps:        map[string]map[string]any{},
		kubeContext: str(sec["context"]),
	}
	if k := str(sec["kubeconfig"]); k != "" {
		s.kubeconfig = k
		if !filepath.IsAbs(k) {
			s.kubeconfig = filepath.Join(cfg.Dir, k)
		}
	}
	rancher, _ := cfg.Plugins["rancher"].(map[string]any)
	s.admins = merged(sec["admins"], rancher["admins"])
	s.users = merged(sec["users"], rancher["users"])
	for app := range appKeys() {
		if m, ok := sec[app].(map[string]any); ok {
			s.apps[app] = m
		}
	}
	return s
}

// repositories reports whether the repository Secret and the two
// Applications are rendered (git.url and infra.url are set).
func (s settings) repositories() bool { return s.gitURL != "" && s.infraURL != "" }

// enabled reports whether the per-app section app says enabled: true.
func (s settings) enabled(app string) bool { return flag(s.apps[app]["enabled"], false) }

// appString is the per-app string key of app, or def when unset.
func (s settings) appString(app, key, def string) string {
	if v := str(s.apps[app][key]); v != "" {
		return v
	}
	return def
}

// merged lists the strings of each list, each once, in order.
func merged(lists ...any) []string {
	out := []string{}
	for _, l := range lists {
		items, _ := l.([]any)
		for _, it := range items {
			if v := str(it); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// str is v when it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// flag is v when it is a boolean, else def.
func flag(v any, def bool) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	return def
}
