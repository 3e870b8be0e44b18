package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/config"
)

func TestCluster_NeverPrintsCredentials(t *testing.T) {
	t.Parallel()
	secrets := []string{"app-cred-id-7f3a9c", "Zq8vN2xLr5TpWk3sHd9", "tskey-auth-kQ4mP7", "rancher-token-xyz:abc123", "git-pass-991"}
	files := map[string]string{
		config.ClusterFile: openstackBase + "include: [secrets.yaml]\nrancher: {url: https://rancher.example}\nargocd: {repo: x}\n",
		config.SecretsFile: "openstack: {credential_id: " + secrets[0] + ", credential_secret: " + secrets[1] + "}\n" +
			"tailscale: {auth_key: " + secrets[2] + "}\n" +
			"rancher: {token: '" + secrets[3] + "'}\nargocd: {git: {username: deploy, password: " + secrets[4] + "}}\n",
	}
	opts := config.LoadOptions{NeedCredentials: true, PluginSections: map[string]string{"rancher": "rancher", "argocd": "argocd"}}
	c, probs := load(t, files, opts)
	if probs != nil {
		t.Fatal(probs)
	}
	if c.OpenStack.CredentialSecret.Reveal() != secrets[1] || c.Tailscale.AuthKey.Reveal() != secrets[2] {
		t.Fatalf("credentials not loaded")
	}
	var out []string
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		out = append(out, fmt.Sprintf(format, c), fmt.Sprintf(format, *c), fmt.Sprintf(format, c.OpenStack), fmt.Sprintf(format, c.Tailscale))
	}
	out = append(out, c.String(), c.GoString(), fmt.Sprint(c.Redacted()))
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(h(&buf)).Info("loaded", "cfg", c, "value", *c, "openstack", c.OpenStack, "key", c.Tailscale.AuthKey)
		out = append(out, buf.String())
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yaml.Marshal(c.OpenStack)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, string(js), string(ys))
	for i, s := range out {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("output %d leaks %q:\n%s", i, secret, s)
			}
		}
		if !strings.Contains(s, "redacted") && !strings.Contains(s, "%!") {
			t.Errorf("output %d shows no %s:\n%s", i, config.RedactedText, s)
		}
	}
	if s := fmt.Sprintf("%+v", c); !strings.Contains(s, "Name:demo") || !strings.Contains(s, "Region:RegionOne") {
		t.Errorf("%%+v should still show the configuration:\n%s", s)
	}
}

func TestSecret_Format(t *testing.T) {
	t.Parallel()
	s := config.Secret("hunter2")
	got := []string{fmt.Sprint(s), fmt.Sprintf("%q", s), fmt.Sprintf("%#v", s), fmt.Sprint(config.Secret(""))}
	want := []string{"<redacted>", `"<redacted>"`, `"<redacted>"`, ""}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("format %d = %q, want %q", i, got[i], want[i])
		}
	}
	if !config.Secret(" CHANGE-ME ").IsPlaceholder() || s.IsPlaceholder() {
		t.Errorf("IsPlaceholder wrong")
	}
}
