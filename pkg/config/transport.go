package config

import (
	"net/url"
	"strings"
)

// credentialURL checks section.url, a URL that talosc sends credentials to:
// an absolute https URL with a host, or http only when section.allow_http
// is true (then with a warning on every run, as the credential travels in
// clear). Without the opt-in, http is refused before anything is contacted.
func (v *validator) credentialURL(section, raw string, allowHTTP bool) (*url.URL, bool) {
	what := credentialName(section)
	return v.httpsURL(section, raw, allowHTTP, plainHTTPRisk{would: what + " would cross the network unencrypted", does: what + " crosses the network unencrypted"})
}

// plainHTTPRisk says what plain http exposes, as a refusal (would) and as
// a warning (does).
type plainHTTPRisk struct{ would, does string }

// httpsURL checks section.url: an absolute https URL with a host, or http
// only when section.allow_http is true, then with a warning on every run
// naming the risk.
func (v *validator) httpsURL(section, raw string, allowHTTP bool, risk plainHTTPRisk) (*url.URL, bool) {
	path := section + ".url"
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		v.errf(path, "%q is not an http(s) URL such as https://host:port/", raw)
		return nil, false
	}
	if u.Scheme == "http" {
		if !allowHTTP {
			v.errf(path, "%q is plain http: %s; use https://, or set %s.allow_http: true to accept that (a loopback lab)",
				raw, risk.would, section)
			return nil, false
		}
		v.warnf("%s is plain http (allowed by %s.allow_http): %s; use https:// outside a loopback lab",
			path, section, risk.does)
	}
	return u, true
}

// tlsVerify warns, on every run, that proxmox.tls_verify: false leaves the
// API token to whoever can intercept the connection.
func (v *validator) tlsVerify() {
	if v.c.Proxmox.TLSVerify.Insecure {
		v.warnf("proxmox.tls_verify is false: the Proxmox API certificate is not verified, so anyone on the path can impersonate the server and take the API token (proxmox.token_secret); set tls_verify to the path of the CA bundle that signed it instead")
	}
}

// credentialName names what a section sends to its url, for messages.
func credentialName(section string) string {
	if section == "openstack" {
		return "the application credential (and every token Keystone issues)"
	}
	return "the API token"
}
