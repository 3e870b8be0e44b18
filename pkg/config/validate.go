package config

import (
	"fmt"
	"strings"
)

// validator checks the decoded Cluster. Paths are cluster.yaml key paths;
// each problem is reported against the file (and line) the key came from.
type validator struct {
	c    *Cluster
	opts LoadOptions
	d    *decoder
	p    *collector
}

// has reports whether path was set and decoded.
func (v *validator) has(path string) bool {
	_, ok := v.d.seen[path]
	return ok && !v.d.failed[path]
}

// present reports whether path was set, even if it failed to decode.
func (v *validator) present(path string) bool {
	_, ok := v.d.seen[path]
	return ok
}

// failed reports whether path was set but refused while decoding.
func (v *validator) failed(path string) bool { return v.d.failed[path] }

// required reports whether path is usable, recording "is required" when it is
// absent (not when it failed to decode or was written at its old location).
func (v *validator) required(path string) bool {
	if _, seen := v.d.seen[path]; !seen && !v.failedAbove(path) && !v.movedInto(path) {
		v.errf(path, "is required")
		return false
	}
	return v.has(path)
}

// failedAbove reports whether path or one of its ancestors failed to decode.
func (v *validator) failedAbove(path string) bool {
	for p := path; p != ""; p = parentPath(p) {
		if v.d.failed[p] {
			return true
		}
	}
	return false
}

// movedInto reports whether a key at its old location was found for path
// or for a key below it (the "has moved" problem already covers it).
func (v *validator) movedInto(path string) bool {
	for to := range v.d.moved {
		if to == path || strings.HasPrefix(to, path+".") {
			return true
		}
	}
	return false
}

// origin is the file and line of path, or of its nearest present ancestor.
func (v *validator) origin(path string) (string, int) {
	for p := path; ; p = parentPath(p) {
		if n := v.d.seen[p]; n != nil {
			return n.file, n.line
		}
		if p == "" {
			return ClusterFile, 0
		}
	}
}

func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	parent, _ := splitLast(p)
	return parent
}

// errf records "<path> <message>".
func (v *validator) errf(path, format string, args ...any) {
	v.problem(path, path+" "+fmt.Sprintf(format, args...))
}

// problem records msg as is.
func (v *validator) problem(path, msg string) {
	file, line := v.origin(path)
	v.p.add(file, line, path, msg)
}

func (v *validator) warnf(format string, args ...any) { v.p.warnf(format, args...) }

// validate runs every check of §2.3 on a decoded Cluster.
func (v *validator) validate() {
	v.general()
	v.versions()
	v.sources()
	provider := v.provider()
	v.pools(provider)
	switch provider {
	case ProviderOpenStack:
		v.openstack()
	case ProviderProxmox:
		v.proxmox()
	}
	v.network(provider)
	v.sdn()
	v.security()
	v.tailscale()
	v.backup()
	if v.opts.NeedCredentials {
		v.credentials(provider)
	}
	v.overlapWarnings()
}

func (v *validator) general() {
	if v.required("name") && !isDNSLabel(v.c.Name) {
		v.errf("name", "%q is not a valid cluster name: use lowercase letters, digits and '-', starting and ending with a letter or digit", v.c.Name)
	}
	v.nonEmpty("talos.extensions", v.c.Talos.Extensions)
}

// provider checks that exactly one provider section is present.
func (v *validator) provider() string {
	switch os, px := v.c.OpenStack != nil, v.c.Proxmox != nil; {
	case os && px:
		osFile, _ := v.origin("openstack")
		pxFile, _ := v.origin("proxmox")
		v.problem("proxmox", fmt.Sprintf("exactly one of openstack and proxmox must be set, found both (openstack in %s, proxmox in %s)", osFile, pxFile))
	case os:
		return ProviderOpenStack
	case px:
		return ProviderProxmox
	default:
		if !v.failed("openstack") && !v.failed("proxmox") {
			v.problem("", "exactly one of openstack and proxmox must be set")
		}
	}
	return ""
}

func (v *validator) tailscale() {
	ts := v.c.Tailscale
	if ts == nil || !v.has("tailscale.login_server") {
		return
	}
	u := ts.LoginServer
	if !strings.HasPrefix(u, "https://") || len(u) == len("https://") {
		v.errf("tailscale.login_server", "%q must be an https:// URL (plain http would send the auth key in clear)", u)
	}
}

// credentials refuses missing, empty and placeholder credentials (§2.2 rule 7).
func (v *validator) credentials(provider string) {
	var keys []string
	switch provider {
	case ProviderOpenStack:
		keys = []string{"openstack.credential_id", "openstack.credential_secret"}
	case ProviderProxmox:
		keys = []string{"proxmox.token_id", "proxmox.token_secret"}
	}
	for _, k := range keys {
		if _, seen := v.d.seen[k]; !seen && !v.failed(k) {
			v.errf(k, "is missing; put it in %s", SecretsFile)
		}
	}
	if v.has("tailscale.auth_key") {
		keys = append(keys, "tailscale.auth_key")
	}
	for _, k := range keys {
		v.credential(k)
	}
}

func (v *validator) credential(path string) {
	if !v.has(path) {
		return
	}
	val := strings.TrimSpace(v.d.seen[path].value)
	switch val {
	case "":
		v.errf(path, "is empty; set it to your real credential")
	case PlaceholderSecret:
		v.errf(path, "is still the scaffolded '%s' placeholder; set it to your real credential", PlaceholderSecret)
	}
}

// nonEmpty refuses empty strings in a list of names.
func (v *validator) nonEmpty(path string, list []string) {
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			v.errf(fmt.Sprintf("%s[%d]", path, i), "is an empty string")
		}
	}
}

// unique refuses a name listed twice.
func (v *validator) unique(path string, list []string) {
	seen := map[string]bool{}
	for i, s := range list {
		if seen[s] {
			v.errf(fmt.Sprintf("%s[%d]", path, i), "lists %s twice", s)
		}
		seen[s] = true
	}
}

// isDNSLabel matches ^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$ (names and pool names).
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
