package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

// FuzzLoad feeds arbitrary cluster.yaml (and secrets.yaml) text to Load. It
// must never panic, every rejection must be a non-empty Problems error of
// one-line problems, and every accepted configuration must be usable.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{config.ProviderOpenStack, config.ProviderProxmox} {
		c, s := config.Scaffold("mycluster", p)
		f.Add(string(c), string(s), uint8(0))
		f.Add(string(c), string(s), uint8(1))
	}
	f.Add(sdnExample, "", uint8(0))
	f.Add(openstackBase+"include: [secrets.yaml]\nrancher: {url: x}\n", "openstack: {credential_id: a, credential_secret: b}\nrancher: {token: t}\n", uint8(5))
	f.Add(proxmoxBase+"security: {http: {port: 8080}, Web: {port: 1, hosts: {a: 10.0.0.0/8}}, web: {}}\n", "", uint8(0))
	f.Add("a: &a [*a]\n", "", uint8(0))
	f.Add("x: &x {<<: *x}\n", "", uint8(0))
	f.Add("include: [secrets.yaml, ../x, /etc/passwd, .]\n", "include: [a]\n", uint8(2))
	f.Fuzz(func(t *testing.T, cluster, secrets string, flags uint8) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte(cluster), 0o600); err != nil {
			t.Fatal(err)
		}
		if secrets != "" {
			if err := os.WriteFile(filepath.Join(dir, config.SecretsFile), []byte(secrets), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		opts := config.LoadOptions{NeedCredentials: flags&1 != 0, MissingIncludesOK: flags&2 != 0}
		if flags&4 != 0 {
			opts.PluginSections = map[string]string{"rancher": "rancher", "charts": "charts"}
		}
		c, err := config.Load(dir, opts)
		if err != nil {
			checkRejection(t, c, err)
			return
		}
		checkAccepted(t, c)
	})
}

func checkRejection(t *testing.T, c *config.Cluster, err error) {
	t.Helper()
	var probs config.Problems
	if !errors.As(err, &probs) || len(probs) == 0 || c != nil {
		t.Fatalf("rejection is not a non-empty Problems error: %T %v (cluster %v)", err, err, c != nil)
	}
	for _, p := range probs {
		if p.File == "" || p.Message == "" || strings.Contains(p.String(), "\n") {
			t.Fatalf("malformed problem %#v", p)
		}
	}
}

func checkAccepted(t *testing.T, c *config.Cluster) {
	t.Helper()
	if c.Provider() == "" || c.Name == "" || c.ControlPlane.Count < 1 || !c.Network.Cluster.CIDR.IsValid() {
		t.Fatalf("accepted an incomplete configuration: %+v", c)
	}
	want := c.ControlPlane.Count
	for _, p := range c.Workers {
		want += p.Count
	}
	if got := len(c.Hostnames()); got != want {
		t.Fatalf("Hostnames() = %d machines, want %d", got, want)
	}
	for _, m := range c.Hostnames() {
		if len(m.Hostname) > 63 {
			t.Fatalf("accepted hostname %s longer than 63", m.Hostname)
		}
	}
	if _, err := json.Marshal(c); err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if _, err := json.Marshal(c.Plugins); err != nil {
		t.Fatalf("plugin sections are not JSON-compatible: %v", err)
	}
	_ = fmt.Sprintf("%+v %#v", c, c)
}
