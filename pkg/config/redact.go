package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// RedactedText is what a credential prints as.
const RedactedText = "<redacted>"

// Secret is a credential from cluster.yaml or secrets.yaml. It never prints:
// fmt (every verb), slog, encoding/json and yaml.v3 all see "<redacted>"
// (or "" when unset). Call Reveal to use the value.
type Secret string

// Reveal returns the credential itself.
func (s Secret) Reveal() string { return string(s) }

// IsPlaceholder reports whether s is still the scaffold's CHANGE-ME.
func (s Secret) IsPlaceholder() bool { return strings.TrimSpace(string(s)) == PlaceholderSecret }

// String returns "<redacted>", or "" when the secret is unset.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return RedactedText
}

// GoString is the %#v form: a quoted "<redacted>".
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// Format prints the redacted form for every verb.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' || verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, strconv.Quote(s.String()))
		return
	}
	fmt.Fprint(f, s.String())
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// MarshalYAML writes the redacted form.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// clusterView is Cluster without its methods, for printing a redacted copy
// through fmt's default struct formatting.
type clusterView Cluster

// Redacted returns a copy that is safe to print or serialise: credential
// fields hold "<redacted>" and plugin-section values under credential-like
// keys (key, secret, token, password, passwd, credential) are masked.
func (c Cluster) Redacted() Cluster {
	r := c
	r.SecretValues = nil
	if c.OpenStack != nil {
		o := *c.OpenStack
		o.CredentialID, o.CredentialSecret = redactSecret(o.CredentialID), redactSecret(o.CredentialSecret)
		r.OpenStack = &o
	}
	if c.Proxmox != nil {
		p := *c.Proxmox
		p.TokenID, p.TokenSecret = redactSecret(p.TokenID), redactSecret(p.TokenSecret)
		r.Proxmox = &p
	}
	if c.Tailscale != nil {
		t := *c.Tailscale
		t.AuthKey = redactSecret(t.AuthKey)
		r.Tailscale = &t
	}
	if c.Plugins != nil {
		r.Plugins = make(map[string]any, len(c.Plugins))
		for k, v := range c.Plugins {
			r.Plugins[k] = maskCredentials(v)
		}
	}
	return r
}

func redactSecret(s Secret) Secret { return Secret(s.String()) }

// maskCredentials copies a JSON-compatible value, replacing every value
// whose key looks like a credential.
func maskCredentials(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if credentialKey(k) && val != nil {
				out[k] = RedactedText
				continue
			}
			out[k] = maskCredentials(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = maskCredentials(val)
		}
		return out
	}
	return v
}

func credentialKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"key", "secret", "token", "password", "passwd", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Format prints the redacted copy (see Redacted) for every verb, so
// fmt.Sprintf("%+v", cfg) and %#v never show a credential.
func (c Cluster) Format(f fmt.State, verb rune) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), clusterView(c.Redacted()))
	if verb == 'v' && f.Flag('#') {
		s = strings.Replace(s, "config.clusterView", "config.Cluster", 1)
	}
	fmt.Fprint(f, s)
}

// String is the %v form of the redacted copy.
func (c Cluster) String() string { return fmt.Sprint(c) }

// GoString is the %#v form of the redacted copy.
func (c Cluster) GoString() string { return fmt.Sprintf("%#v", c) }

// LogValue implements slog.LogValuer with the redacted copy.
func (c Cluster) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", c.Name),
		slog.String("provider", c.Provider()),
		slog.String("dir", c.Dir),
		slog.Any("config", clusterView(c.Redacted())),
	)
}

// MarshalJSON encodes the redacted copy.
func (c Cluster) MarshalJSON() ([]byte, error) { return json.Marshal(clusterView(c.Redacted())) }

// Pointer sections print their contents (not an address) inside %v of a
// Cluster; Secret fields in them stay redacted.
type (
	openStackView   OpenStack
	proxmoxView     Proxmox
	tailscaleView   Tailscale
	sdnView         SDN
	externalNetView ExternalNetwork
	pxExternalView  ProxmoxExternalNetwork
)

// Format prints the section's fields.
func (o *OpenStack) Format(f fmt.State, verb rune) { formatPtr(f, verb, (*openStackView)(o)) }

// Format prints the section's fields.
func (p *Proxmox) Format(f fmt.State, verb rune) { formatPtr(f, verb, (*proxmoxView)(p)) }

// Format prints the section's fields.
func (t *Tailscale) Format(f fmt.State, verb rune) { formatPtr(f, verb, (*tailscaleView)(t)) }

// Format prints the section's fields.
func (s *SDN) Format(f fmt.State, verb rune) { formatPtr(f, verb, (*sdnView)(s)) }

// Format prints the section's fields.
func (e *ExternalNetwork) Format(f fmt.State, verb rune) { formatPtr(f, verb, (*externalNetView)(e)) }

// Format prints the section's fields.
func (e *ProxmoxExternalNetwork) Format(f fmt.State, verb rune) {
	formatPtr(f, verb, (*pxExternalView)(e))
}

// formatPtr prints &{...} of a method-less view of a non-nil pointer.
func formatPtr[T any](f fmt.State, verb rune, v *T) {
	if v == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprint(f, "&"+fmt.Sprintf(fmt.FormatString(f, verb), *v))
}
