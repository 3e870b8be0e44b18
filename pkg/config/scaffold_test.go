package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

func TestScaffold_LoadsAndNeedsRealCredentials(t *testing.T) {
	t.Parallel()
	placeholder := func(key string, line int) config.Problem {
		return config.Problem{
			File: config.SecretsFile, Line: line, Path: key,
			Message: key + " is still the scaffolded 'CHANGE-ME' placeholder; set it to your real credential",
		}
	}
	cases := []struct {
		provider string
		want     config.Problems
	}{
		{config.ProviderOpenStack, config.Problems{
			placeholder("openstack.credential_id", 4), placeholder("openstack.credential_secret", 5), placeholder("tailscale.auth_key", 7),
		}},
		{config.ProviderProxmox, config.Problems{
			placeholder("proxmox.token_secret", 5), placeholder("tailscale.auth_key", 7),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			cluster, secrets := config.Scaffold("mycluster", tc.provider)
			files := map[string]string{config.ClusterFile: string(cluster), config.SecretsFile: string(secrets)}
			c, probs := load(t, files, config.LoadOptions{})
			if probs != nil {
				t.Fatalf("scaffold does not load:\n%v", probs)
			}
			if c.Provider() != tc.provider || c.Name != "mycluster" || len(c.Warnings) != 0 || c.Tailscale == nil {
				t.Errorf("provider %q name %q warnings %v tailscale %v", c.Provider(), c.Name, c.Warnings, c.Tailscale)
			}
			if c.Tailscale.Active() {
				t.Errorf("a CHANGE-ME auth key must not count as active")
			}
			_, probs = load(t, files, config.LoadOptions{NeedCredentials: true})
			if d := cmp.Diff(tc.want, probs); d != "" {
				t.Errorf("NeedCredentials problems (-want +got):\n%s", d)
			}
		})
	}
}

func TestScaffold_Content(t *testing.T) {
	t.Parallel()
	cluster, secrets := config.Scaffold("lab", "")
	for _, want := range []string{
		"name: lab\ninclude: [secrets.yaml]          # keep, or the loader refuses secrets.yaml\n",
		"  version: v1.13.8\n", "  version: v1.36.1\n", "openstack:\n  url: https://openstack.example.edu:5000/v3/\n",
		"  # metrics: {port: 9100, hosts: {office vpn: 203.0.113.0/24}}\n", "tailscale:\n  login_server: https://headscale.example.edu\n",
		"    disk: 100\n    # max_unavailable: 1         # nodes a Talos upgrade may take down at once\n",
	} {
		if !strings.Contains(string(cluster), want) {
			t.Errorf("openstack cluster.yaml lacks %q", want)
		}
	}
	if !strings.Contains(string(secrets), `credential_id: "CHANGE-ME"`) || !strings.Contains(string(secrets), "tailscale:\n  auth_key: \"CHANGE-ME\"\n") {
		t.Errorf("openstack secrets.yaml:\n%s", secrets)
	}
	cluster, secrets = config.Scaffold("lab", config.ProviderProxmox)
	for _, want := range []string{
		"      bridge: vmbr0              # or vnet: <id>, or sdn: {} (managed EVPN)\n",
		"    kubeapi_vip: 192.168.0.2     # outside DHCP range and outside the SDN static layout\n",
		"  dns: []                        # DHCP supplies DNS on bridge/vnet; SDN needs resolvers\n",
	} {
		if !strings.Contains(string(cluster), want) {
			t.Errorf("proxmox cluster.yaml lacks %q", want)
		}
	}
	if !strings.Contains(string(secrets), `token_id: "taloscluster@pve!provider"`) {
		t.Errorf("proxmox secrets.yaml:\n%s", secrets)
	}
}

func TestScaffold_QuotesAnOddName(t *testing.T) {
	t.Parallel()
	cluster, secrets := config.Scaffold("My Cluster: x", config.ProviderOpenStack)
	_, probs := load(t, map[string]string{config.ClusterFile: string(cluster), config.SecretsFile: string(secrets)}, config.LoadOptions{})
	want := config.Problems{inCluster("name", `name "My Cluster: x" is not a valid cluster name: use lowercase letters, digits and '-', starting and ending with a letter or digit`)}
	if d := diffProblems(want, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
