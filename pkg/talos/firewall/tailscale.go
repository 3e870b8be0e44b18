package firewall

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/types/runtime/extensions"

	"github.com/talosc/talosc/pkg/config"
)

// TailscaleService is the name of the tailscale extension service.
const TailscaleService = "tailscale"

// TailscaleDocument returns the ExtensionServiceConfig document that makes
// the node join the tailnet: environment TS_AUTHKEY=<authKey>,
// TS_HOSTNAME=<hostname> and TS_EXTRA_ARGS=--login-server=<loginServer>
// (TS_EXTRA_ARGS= when loginServer is empty: public Tailscale). The login
// server must be an https:// URL; http would hand the auth key to anyone on
// the path. Errors never contain the auth key.
func TailscaleDocument(hostname, authKey, loginServer string) (string, error) {
	if !validHostname(hostname) {
		return "", fmt.Errorf("tailscale: hostname %q is not a valid DNS name", hostname)
	}
	if err := checkAuthKey(authKey); err != nil {
		return "", err
	}
	extra, err := loginServerArg(loginServer)
	if err != nil {
		return "", err
	}
	doc := extensions.NewServicesConfigV1Alpha1()
	doc.ServiceName = TailscaleService
	doc.ServiceEnvironment = []string{
		"TS_AUTHKEY=" + authKey,
		"TS_HOSTNAME=" + hostname,
		"TS_EXTRA_ARGS=" + extra,
	}
	return encode(doc)
}

// checkAuthKey refuses an unset, placeholder or multi-word key without
// printing it.
func checkAuthKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return errors.New("tailscale.auth_key is empty; set it in secrets.yaml or drop the tailscale document")
	case config.Secret(key).IsPlaceholder():
		return fmt.Errorf("tailscale.auth_key is still the scaffold placeholder %s; put a real pre-auth key in secrets.yaml", config.PlaceholderSecret)
	case strings.ContainsAny(key, " \t\r\n"):
		return errors.New("tailscale.auth_key contains whitespace; paste the key as one word")
	}
	return nil
}

// loginServerArg validates login_server and returns the TS_EXTRA_ARGS value.
func loginServerArg(server string) (string, error) {
	if server == "" {
		return "", nil
	}
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return "", fmt.Errorf("tailscale.login_server %q is not a URL: %w", server, err)
	case u.Scheme != "https":
		return "", fmt.Errorf("tailscale.login_server %q must be an https:// URL (the auth key is sent to it)", server)
	case u.Host == "":
		return "", fmt.Errorf("tailscale.login_server %q has no host", server)
	case u.User != nil:
		return "", errors.New("tailscale.login_server must not carry credentials in the URL")
	case strings.ContainsAny(server, " \t\r\n"):
		return "", fmt.Errorf("tailscale.login_server %q contains whitespace", server)
	}
	return "--login-server=" + server, nil
}

// validHostname accepts a DNS name: dot-separated labels of 1-63 letters,
// digits and inner hyphens, 253 characters at most.
func validHostname(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if strings.ContainsFunc(label, notHostnameChar) {
			return false
		}
	}
	return true
}

func notHostnameChar(c rune) bool {
	return (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-'
}
