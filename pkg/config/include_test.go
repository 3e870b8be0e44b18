package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

const withSecrets = openstackBase + "include: [secrets.yaml]\n"

func TestLoad_IncludeMergesFiles(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		config.ClusterFile: openstackBase + "include: [secrets.yaml, extra/pools.yaml]\ntailscale:\n",
		config.SecretsFile: "openstack: {credential_id: id-1, credential_secret: s3cr3t}\ntailscale: {auth_key: tskey-1}\n",
		"extra/pools.yaml": "workers:\n  gpu: {count: 1, flavor: g1, disk: 200}\ntags: {team: ml}\n",
	}
	c, probs := load(t, files, config.LoadOptions{NeedCredentials: true})
	if probs != nil {
		t.Fatal(probs)
	}
	if d := cmp.Diff([]string{"cluster.yaml", "secrets.yaml", "extra/pools.yaml"}, c.Files); d != "" {
		t.Errorf("Files (-want +got):\n%s", d)
	}
	if c.OpenStack.CredentialID.Reveal() != "id-1" || c.OpenStack.URL == "" {
		t.Errorf("openstack not merged: %+v", c.OpenStack)
	}
	if !c.Tailscale.Active() {
		t.Errorf("tailscale from secrets.yaml is not active")
	}
	if got := []string{c.Workers[0].Name, c.Workers[1].Name}; !cmp.Equal(got, []string{"worker", "gpu"}) {
		t.Errorf("worker order = %v, want file order [worker gpu]", got)
	}
}

func TestLoad_SectionInAnyFileOptsIn(t *testing.T) {
	t.Parallel()
	c, probs := load(t, map[string]string{
		config.ClusterFile: withSecrets,
		config.SecretsFile: "tailscale: {auth_key: tskey-1}\n",
	}, config.LoadOptions{})
	if probs != nil {
		t.Fatal(probs)
	}
	if c.Tailscale == nil || !c.Tailscale.Active() {
		t.Errorf("a tailscale section only in secrets.yaml must enable Tailscale")
	}
}

func TestLoad_IncludeProblems(t *testing.T) {
	t.Parallel()
	sec := "openstack: {credential_id: a, credential_secret: b}\n"
	runProblemCases(t, []problemCase{
		{"scalar set in two files", map[string]string{
			config.ClusterFile: withSecrets, config.SecretsFile: "openstack: {region: Two}\nname: other\n",
		}, config.LoadOptions{}, config.Problems{
			prob("secrets.yaml", "name", "name is set in both cluster.yaml and secrets.yaml; set it in one file only"),
		}},
		{"list set in two files", map[string]string{
			config.ClusterFile: withSecrets, config.SecretsFile: "network: {dns: [1.1.1.1]}\n",
		}, config.LoadOptions{}, config.Problems{
			prob("secrets.yaml", "network.dns", "network.dns is set in both cluster.yaml and secrets.yaml; set it in one file only"),
		}},
		{"null in one file is absent", map[string]string{
			config.ClusterFile: withSecrets + "security:\n", config.SecretsFile: "security: {talos: {vpn: 10.0.0.0/8}}\n",
		}, config.LoadOptions{}, nil},
		{"lists cluster.yaml", only(openstackBase + "include: [cluster.yaml]\n"), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", "include[0] may not list cluster.yaml (it is always read first)"),
		}},
		{"lists cluster.yaml through a symlink", map[string]string{
			config.ClusterFile: openstackBase + "include: [c.yaml]\n", "c.yaml": "symlink:cluster.yaml",
		}, config.LoadOptions{}, config.Problems{
			inCluster("include[0]", `include[0] "c.yaml" is cluster.yaml (through a symlink); it may not be listed`),
		}},
		{"nested include", map[string]string{
			config.ClusterFile: openstackBase + "include: [a.yaml]\n", "a.yaml": "include: [b.yaml]\n", "b.yaml": "",
		}, config.LoadOptions{}, config.Problems{
			prob("a.yaml", "include", "include is only allowed in cluster.yaml; included files cannot include other files"),
		}},
		{"listed twice", map[string]string{
			config.ClusterFile: openstackBase + "include: [secrets.yaml, ./secrets.yaml]\n", config.SecretsFile: sec,
		}, config.LoadOptions{}, config.Problems{
			inCluster("include[1]", `include[1] "./secrets.yaml" is the same file as include[0] ("secrets.yaml")`),
		}},
		{"two paths to one file", map[string]string{
			config.ClusterFile: openstackBase + "include: [secrets.yaml, s.yaml]\n", config.SecretsFile: sec, "s.yaml": "symlink:secrets.yaml",
		}, config.LoadOptions{}, config.Problems{
			inCluster("include[1]", `include[1] "s.yaml" is the same file as include[0] ("secrets.yaml")`),
		}},
		{"outside the directory", only(openstackBase + "include: [../secrets.yaml]\n"), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", `include[0] "../secrets.yaml" is outside the cluster directory`),
		}},
		{"absolute path outside", only(openstackBase + "include: [/etc/hostname]\n"), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", `include[0] "/etc/hostname" is outside the cluster directory`),
		}},
		{
			"not a regular file",
			map[string]string{config.ClusterFile: openstackBase + "include: [sub]\n", "sub": "dir:"},
			config.LoadOptions{},
			config.Problems{inCluster("include[0]", `include[0] "sub" is not a regular file`)},
		},
		{"the directory itself", only(openstackBase + "include: [.]\n"), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", `include[0] "." is not a regular file`),
		}},
		{"missing file", only(withSecrets), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", `include[0] "secrets.yaml" does not exist`),
		}},
		{"missing file allowed", only(withSecrets), config.LoadOptions{MissingIncludesOK: true}, nil},
		{
			"secrets.yaml not listed",
			map[string]string{config.ClusterFile: openstackBase, config.SecretsFile: sec},
			config.LoadOptions{},
			config.Problems{
				inCluster("include", "secrets.yaml exists but cluster.yaml does not include it; add include: [secrets.yaml] so its credentials are not silently ignored"),
			},
		},
		{"include is not a list", only(openstackBase + "include: secrets.yaml\n"), config.LoadOptions{}, config.Problems{
			inCluster("include", `include must be a list of file names, e.g. include: [secrets.yaml], not the string "secrets.yaml"`),
		}},
		{"include entry is not a name", only(openstackBase + "include: [{a: b}]\n"), config.LoadOptions{}, config.Problems{
			inCluster("include[0]", "include[0] must be a file name, not a mapping"),
		}},
		{"unknown top-level key reported against its file", map[string]string{
			config.ClusterFile: withSecrets, config.SecretsFile: "bogus: 1\n",
		}, config.LoadOptions{}, config.Problems{
			prob("secrets.yaml", "", "unknown key(s): bogus; talosc does not use them (is a plugin that uses them missing from PATH?)"),
		}},
		{"deeper problem reported against its file", map[string]string{
			config.ClusterFile: withSecrets, config.SecretsFile: "openstack: {regoin: x}\nnetwork: {cluster: {gateway: 10.0.0.1}}\n",
		}, config.LoadOptions{}, config.Problems{
			prob("secrets.yaml", "openstack.regoin", "openstack.regoin is not a valid key; did you mean region?"),
			prob("secrets.yaml", "network.cluster.gateway", "network.cluster.gateway 10.0.0.1 is outside network.cluster.cidr 192.168.0.0/21"),
		}},
		{"second provider in secrets.yaml", map[string]string{
			config.ClusterFile: withSecrets, config.SecretsFile: "proxmox: {token_id: a@pve!b, token_secret: x}\n",
		}, config.LoadOptions{}, config.Problems{
			prob("secrets.yaml", "proxmox", "exactly one of openstack and proxmox must be set, found both (openstack in cluster.yaml, proxmox in secrets.yaml)"),
		}},
	})
}

func TestLoad_MissingIncludeWarns(t *testing.T) {
	t.Parallel()
	c, probs := load(t, only(withSecrets), config.LoadOptions{MissingIncludesOK: true})
	if probs != nil {
		t.Fatal(probs)
	}
	if d := cmp.Diff([]string{"include file secrets.yaml is missing; reading it as empty"}, c.Warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

func TestLoad_IncludeSymlinkOutsideIsRefused(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secrets.yaml")
	if err := os.WriteFile(outside, []byte("tailscale: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, probs := load(t, map[string]string{
		config.ClusterFile: withSecrets, config.SecretsFile: "symlink:" + outside,
	}, config.LoadOptions{})
	want := config.Problems{inCluster("include[0]", `include[0] "secrets.yaml" resolves to `+outside+", outside the cluster directory")}
	if d := diffProblems(want, probs); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

func TestLoad_IncludeSymlinkInsideIsFollowed(t *testing.T) {
	t.Parallel()
	c, probs := load(t, map[string]string{
		config.ClusterFile: withSecrets, config.SecretsFile: "symlink:private/creds.yaml",
		"private/creds.yaml": "tailscale: {auth_key: k}\n",
	}, config.LoadOptions{})
	if probs != nil {
		t.Fatal(probs)
	}
	if !c.Tailscale.Active() {
		t.Errorf("tailscale from the symlinked file is not active")
	}
}

func TestLoad_LineNumbers(t *testing.T) {
	t.Parallel()
	_, probs := load(t, map[string]string{
		config.ClusterFile: withSecrets, config.SecretsFile: "# creds\nopenstack:\n  regoin: x\n",
	}, config.LoadOptions{})
	if len(probs) != 1 || probs[0].Line != 3 || probs[0].String() != "secrets.yaml:3: openstack.regoin is not a valid key; did you mean region?" {
		t.Errorf("problems = %#v, want one at secrets.yaml:3", probs)
	}
}
