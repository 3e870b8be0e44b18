package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

func TestValidate_GeneralAndPools(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 48)
	name40 := strings.Repeat("n", 40)
	pool19 := "abcdefghijklmnopqrs"
	none := config.LoadOptions{}
	runProblemCases(t, []problemCase{
		{
			"name required", only(edit(t, openstackBase, del("name"))), none,
			config.Problems{inCluster("name", "name is required")},
		},
		{
			"name pattern", only(edit(t, openstackBase, set("name", "-demo"))), none,
			config.Problems{inCluster("name", `name "-demo" is not a valid cluster name: use lowercase letters, digits and '-', starting and ending with a letter or digit`)},
		},
		{
			"control-plane hostname too long", only(edit(t, openstackBase, set("name", long))), none,
			config.Problems{inCluster("controlplane", "controlplane would have the hostname "+long+"-controlplane-03, 64 characters long; hostnames are limited to 63 (shorten name or the pool name)")},
		},
		{
			"widest ordinal counts", only(edit(t, openstackBase, set("name", name40), set("controlplane.count", "1"),
				set("workers", "{"+pool19+": {count: 100, flavor: f, disk: 10}}"))), none,
			config.Problems{inCluster("workers."+pool19, "workers."+pool19+" would have the hostname "+name40+"-"+pool19+"-100, 64 characters long; hostnames are limited to 63 (shorten name or the pool name)")},
		},
		{
			"reserved pool name", only(edit(t, openstackBase, set("workers.controlplane", "{count: 1, flavor: f, disk: 10}"))), none,
			config.Problems{inCluster("workers.controlplane", "workers.controlplane is not allowed: worker pool name 'controlplane' is reserved")},
		},
		{
			"invalid pool name", only(edit(t, openstackBase, set("workers.GPU", "{count: 1, flavor: f, disk: 10}"))), none,
			config.Problems{inCluster("workers.GPU", "workers.GPU is not a valid pool name: use lowercase letters, digits and '-', starting and ending with a letter or digit")},
		},
		{
			"negative worker count", only(edit(t, openstackBase, set("workers.worker.count", "-1"))), none,
			config.Problems{inCluster("workers.worker.count", "workers.worker.count must be at least 0, not -1")},
		},
		{
			"too many machines", only(edit(t, openstackBase, set("workers.worker.count", "4998"))), none,
			config.Problems{inCluster("workers.worker.count", "the pools add up to more than 5000 machines, the most Kubernetes supports in one cluster")},
		},
		{
			"control plane required", only(edit(t, openstackBase, del("controlplane"))), none,
			config.Problems{inCluster("controlplane", "controlplane is required")},
		},
		{
			"count required", only(edit(t, openstackBase, del("workers.worker.count"))), none,
			config.Problems{inCluster("workers.worker.count", "workers.worker.count is required")},
		},
		{
			"disk required and positive", only(edit(t, openstackBase, del("controlplane.disk"), set("workers.worker.disk", "0"))), none,
			config.Problems{
				inCluster("controlplane.disk", "controlplane.disk is required"),
				inCluster("workers.worker.disk", "workers.worker.disk must be greater than 0, not 0"),
			},
		},
		{
			"flavor required on openstack", only(edit(t, openstackBase, del("workers.worker.flavor"), set("controlplane.flavor", `""`))), none,
			config.Problems{
				inCluster("controlplane.flavor", "controlplane.flavor must not be empty"),
				inCluster("workers.worker.flavor", "workers.worker.flavor is required"),
			},
		},
		{
			"cores and memory required on proxmox", only(edit(t, proxmoxBase, del("controlplane.cores"), set("workers.worker.memory", "0"))), none,
			config.Problems{
				inCluster("controlplane.cores", "controlplane.cores is required"),
				inCluster("workers.worker.memory", "workers.worker.memory must be greater than 0, not 0"),
			},
		},
		{
			"node must be a proxmox node", only(edit(t, proxmoxBase, set("proxmox.nodes", "[pve1, pve2]"), set("workers.worker.node", "pve9"))), none,
			config.Problems{inCluster("workers.worker.node", `workers.worker.node "pve9" is not one of proxmox.nodes (pve1 and pve2)`)},
		},
		{
			"max_unavailable at least 1", only(edit(t, openstackBase, set("workers.worker.max_unavailable", "0"))), none,
			config.Problems{inCluster("workers.worker.max_unavailable", "workers.worker.max_unavailable must be greater than 0, not 0")},
		},
		{
			"max_unavailable refused on the control plane", only(edit(t, proxmoxBase, set("controlplane.max_unavailable", "1"))), none,
			config.Problems{inCluster("controlplane.max_unavailable", "controlplane.max_unavailable is not allowed: control planes are always upgraded one at a time (etcd must keep its quorum); set max_unavailable on worker pools")},
		},
		{
			"no provider", only(edit(t, openstackBase, del("openstack"))), none,
			config.Problems{inCluster("", "exactly one of openstack and proxmox must be set")},
		},
		{
			"empty extension", only(edit(t, openstackBase, set("talos.extensions", `[siderolabs/iscsi-tools, ""]`))), none,
			config.Problems{inCluster("talos.extensions[1]", "talos.extensions[1] is an empty string")},
		},
		{
			"invalid patch", only(edit(t, openstackBase, set("talos.config_patches", `["{a: ["]`))), none,
			config.Problems{inCluster("talos.config_patches[0]", "talos.config_patches[0] is not valid YAML: yaml: line 1: did not find expected node content")},
		},
		{
			"patch of the wrong type", only(edit(t, openstackBase, set("workers.worker.config_patches", `[1]`))), none,
			config.Problems{inCluster("workers.worker.config_patches[0]", "workers.worker.config_patches[0] must be a YAML string or mapping, not the number 1")},
		},
		{
			"tag value of the wrong type", only(edit(t, openstackBase, set("tags", `{a: {b: c}}`))), none,
			config.Problems{inCluster("tags.a", "tags.a must be a string, number or boolean, not a mapping")},
		},
	})
}

// TestPool_MaxUnavailable: one node at a time unless a worker pool asks
// for more; an explicit null is unset.
func TestPool_MaxUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		value string
		want  int
	}{
		{"unset", "", 1},
		{"null", "null", 1},
		{"one", "1", 1},
		{"ten", "10", 10},
		{"a digit string", `"4"`, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			yaml := openstackBase
			if tc.value != "" {
				yaml = edit(t, openstackBase, set("workers.worker.max_unavailable", tc.value))
			}
			c := mustLoad(t, yaml)
			if got := c.Workers[0].MaxUnavailable(); got != tc.want {
				t.Errorf("workers.worker MaxUnavailable() = %d, want %d", got, tc.want)
			}
			if got := c.ControlPlane.MaxUnavailable(); got != 1 {
				t.Errorf("controlplane MaxUnavailable() = %d, want 1", got)
			}
		})
	}
}

func TestValidate_Versions(t *testing.T) {
	t.Parallel()
	v := func(talos, kube string) string {
		return edit(t, openstackBase, set("talos.version", talos), set("kubernetes.version", kube))
	}
	runProblemCases(t, []problemCase{
		{
			"latest", only(v("latest", "v1.36.1")),
			config.LoadOptions{},
			config.Problems{inCluster("talos.version", `talos.version "latest" is not a version (vMAJOR.MINOR.PATCH, e.g. v1.13.8)`)},
		},
		{
			"unquoted float", only(v("1.13", "v1.36.1")),
			config.LoadOptions{},
			config.Problems{inCluster("talos.version", `talos.version "1.13" is not a version (vMAJOR.MINOR.PATCH, e.g. v1.13.8)`)},
		},
		{
			"required", only(edit(t, openstackBase, del("kubernetes.version"))),
			config.LoadOptions{},
			config.Problems{inCluster("kubernetes.version", "kubernetes.version is required")},
		},
		{
			"talos too old", only(v("v1.12.9", "v1.33.0")),
			config.LoadOptions{},
			config.Problems{inCluster("talos.version", "talos.version v1.12.9 is older than v1.13.0, the oldest Talos talosc supports")},
		},
		{
			"talos too new", only(v("v1.15.0", "v1.36.0")),
			config.LoadOptions{},
			config.Problems{inCluster("talos.version", "talos.version v1.15.0 is newer than this talosc knows (it knows Talos up to 1.14); upgrade talosc")},
		},
		{
			"talos major 2", only(v("v2.0.0", "v1.36.0")),
			config.LoadOptions{},
			config.Problems{inCluster("talos.version", "talos.version v2.0.0 is newer than this talosc knows (it knows Talos up to 1.14); upgrade talosc")},
		},
		{
			"kubernetes too old for talos 1.13", only(v("v1.13.8", "v1.30.5")),
			config.LoadOptions{},
			config.Problems{inCluster("kubernetes.version", "kubernetes.version v1.30.5 is not supported by Talos 1.13 (it supports Kubernetes 1.31 to 1.36)")},
		},
		{
			"kubernetes too new for talos 1.13", only(v("v1.13.8", "v1.37.0")),
			config.LoadOptions{},
			config.Problems{inCluster("kubernetes.version", "kubernetes.version v1.37.0 is not supported by Talos 1.13 (it supports Kubernetes 1.31 to 1.36)")},
		},
		{
			"kubernetes too old for talos 1.14", only(v("v1.14.0", "v1.31.9")),
			config.LoadOptions{},
			config.Problems{inCluster("kubernetes.version", "kubernetes.version v1.31.9 is not supported by Talos 1.14 (it supports Kubernetes 1.32 to 1.37)")},
		},
		{"talos 1.14 with kubernetes 1.37", only(v("v1.14.0", "v1.37.0")), config.LoadOptions{}, nil},
		{"prerelease and build suffixes", only(v("v1.14.0-beta.1", "v1.36.0+k3s1")), config.LoadOptions{}, nil},
	})
	c := mustLoad(t, v("1.13.8", "1.36.1"))
	if c.Talos.Version != "v1.13.8" || c.Kubernetes.Version != "v1.36.1" {
		t.Errorf("versions = %s, %s; want the leading v added", c.Talos.Version, c.Kubernetes.Version)
	}
}

func TestValidate_Warnings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cluster string
		want    []string
	}{
		{"none", openstackBase, nil},
		{"single control plane", edit(t, openstackBase, set("controlplane.count", "1")), []string{"single controlplane, no HA"}},
		{"even control plane", edit(t, openstackBase, set("controlplane.count", "4")), []string{"even controlplane count (4), etcd needs a majority"}},
		{
			"pod network overlap", edit(t, openstackBase, set("network.cluster.cidr", "10.244.8.0/24")),
			[]string{"network.cluster.cidr 10.244.8.0/24 overlaps the Kubernetes pod network 10.244.0.0/16"},
		},
		{
			"service network overlap", edit(t, openstackBase, set("network.cluster.cidr", "10.0.0.0/8")),
			[]string{
				"network.cluster.cidr 10.0.0.0/8 overlaps the Kubernetes pod network 10.244.0.0/16",
				"network.cluster.cidr 10.0.0.0/8 overlaps the Kubernetes service network 10.96.0.0/12",
			},
		},
		{
			"dns on a bridge", edit(t, proxmoxBase, set("network.dns", "[1.1.1.1]")),
			[]string{"network.dns is ignored on a Proxmox bridge/vnet (DHCP-backed) network; the nodes use the resolvers DHCP hands out"},
		},
		{
			"keys of the other provider", edit(t, openstackBase, set("controlplane.cores", "4"), set("workers.worker.node", "pve1")),
			[]string{"controlplane.cores is ignored with openstack (it is a proxmox setting)", "workers.worker.node is ignored with openstack (it is a proxmox setting)"},
		},
		{
			"flavor on proxmox", edit(t, proxmoxBase, set("controlplane.flavor", "m1")),
			[]string{"controlplane.flavor is ignored with proxmox (pools use cores and memory)"},
		},
		{"https with the http opt-in", edit(t, proxmoxBase, set("proxmox.allow_http", "true")), nil},
		{
			"openstack http allowed", edit(t, openstackBase, set("openstack.url", "http://127.0.0.1:5000/v3/"), set("openstack.allow_http", "true")),
			[]string{"openstack.url is plain http (allowed by openstack.allow_http): the application credential (and every token Keystone issues) crosses the network unencrypted; use https:// outside a loopback lab"},
		},
		{
			"proxmox http allowed", edit(t, proxmoxBase, set("proxmox.url", "http://127.0.0.1:8006/api2/json"), set("proxmox.allow_http", "true")),
			[]string{"proxmox.url is plain http (allowed by proxmox.allow_http): the API token crosses the network unencrypted; use https:// outside a loopback lab"},
		},
		{
			"tls_verify false", edit(t, proxmoxBase, set("proxmox.tls_verify", "false")),
			[]string{"proxmox.tls_verify is false: the Proxmox API certificate is not verified, so anyone on the path can impersonate the server and take the API token (proxmox.token_secret); set tls_verify to the path of the CA bundle that signed it instead"},
		},
		{"tls_verify true", edit(t, proxmoxBase, set("proxmox.tls_verify", "true")), nil},
		{"tls_verify a CA bundle", edit(t, proxmoxBase, set("proxmox.tls_verify", "/etc/ssl/pve.pem")), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tc.cluster)
			if d := cmp.Diff(tc.want, c.Warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}

func TestValidate_Credentials(t *testing.T) {
	t.Parallel()
	need := config.LoadOptions{NeedCredentials: true}
	withSec := func(base, secrets string) map[string]string {
		return map[string]string{config.ClusterFile: base + "include: [secrets.yaml]\n", config.SecretsFile: secrets}
	}
	placeholder := func(key string) config.Problem {
		return prob("secrets.yaml", key, key+" is still the scaffolded 'CHANGE-ME' placeholder; set it to your real credential")
	}
	runProblemCases(t, []problemCase{
		{"not checked without NeedCredentials", withSec(openstackBase, "openstack: {credential_id: CHANGE-ME}\n"), config.LoadOptions{}, nil},
		{"openstack credentials absent", only(openstackBase), need, config.Problems{
			inCluster("openstack.credential_id", "openstack.credential_id is missing; put it in secrets.yaml"),
			inCluster("openstack.credential_secret", "openstack.credential_secret is missing; put it in secrets.yaml"),
		}},
		{"empty and placeholder", withSec(openstackBase, "openstack: {credential_id: ' ', credential_secret: CHANGE-ME}\n"), need, config.Problems{
			prob("secrets.yaml", "openstack.credential_id", "openstack.credential_id is empty; set it to your real credential"),
			placeholder("openstack.credential_secret"),
		}},
		{"proxmox token absent", withSec(proxmoxBase, "proxmox: {token_id: talosc@pve!provider}\n"), need, config.Problems{
			inCluster("proxmox.token_secret", "proxmox.token_secret is missing; put it in secrets.yaml"),
		}},
		{"tailscale key absent is fine", withSec(proxmoxBase, "proxmox: {token_id: a@pve!b, token_secret: s}\ntailscale: {}\n"), need, nil},
		{
			"tailscale key placeholder", withSec(proxmoxBase, "proxmox: {token_id: a@pve!b, token_secret: s}\ntailscale: {auth_key: CHANGE-ME}\n"), need,
			config.Problems{placeholder("tailscale.auth_key")},
		},
		{
			"tailscale key empty", withSec(proxmoxBase, "proxmox: {token_id: a@pve!b, token_secret: s}\ntailscale: {auth_key: ''}\n"), need,
			config.Problems{prob("secrets.yaml", "tailscale.auth_key", "tailscale.auth_key is empty; set it to your real credential")},
		},
		{
			"malformed token id", withSec(proxmoxBase, "proxmox: {token_id: root, token_secret: s}\n"),
			config.LoadOptions{},
			config.Problems{prob("secrets.yaml", "proxmox.token_id", "proxmox.token_id must look like user@realm!tokenname")},
		},
	})
}

func TestValidate_TailscaleAndSecurity(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	runProblemCases(t, []problemCase{
		{
			"http login server", only(edit(t, openstackBase, set("tailscale.login_server", "http://hs.example"))), none,
			config.Problems{inCluster("tailscale.login_server", `tailscale.login_server "http://hs.example" must be an https:// URL (plain http would send the auth key in clear)`)},
		},
		{
			"rule without a default port", only(edit(t, openstackBase, set("security.metrics", "{office: 10.0.0.0/8}"))), none,
			config.Problems{inCluster("security.metrics", "security.metrics requires an explicit 'port' (only kubernetes, talos, http and https have defaults)")},
		},
		{
			"port out of range", only(edit(t, openstackBase, set("security.metrics", "{port: 70000, hosts: {}}"))), none,
			config.Problems{inCluster("security.metrics.port", "security.metrics.port must be between 1 and 65535, not 70000")},
		},
		{
			"http cannot change port", only(edit(t, openstackBase, set("security.http", "{port: 8080, hosts: {}}"))), none,
			config.Problems{inCluster("security.http.port", "security.http.port cannot change: http always means port 80; use a differently named rule for port 8080")},
		},
		{
			"long form extra key", only(edit(t, openstackBase, set("security.x", "{port: 22, hosts: {}, hostz: {}}"))), none,
			config.Problems{inCluster("security.x.hostz", "security.x.hostz is not a valid key; a rule with port or hosts takes only those two keys (did you mean hosts?)")},
		},
		{
			"host bits set", only(edit(t, openstackBase, set("security.kubernetes", "{office: 203.0.113.1/24}"))), none,
			config.Problems{inCluster("security.kubernetes.office", "security.kubernetes.office 203.0.113.1/24 is not a network address (did you mean 203.0.113.0/24, or 203.0.113.1/32 for one host?)")},
		},
		{
			"not IPv4", only(edit(t, openstackBase, set("security.kubernetes", "{office: 'fd00::/8'}"))), none,
			config.Problems{inCluster("security.kubernetes.office", `security.kubernetes.office "fd00::/8" is not an IPv4 network (CIDR such as 192.168.0.0/24)`)},
		},
		{
			"rule is not a mapping", only(edit(t, openstackBase, set("security.kubernetes", "10.0.0.0/8"))), none,
			config.Problems{inCluster("security.kubernetes", `security.kubernetes must be a mapping of label: CIDR, or {port: N, hosts: {label: CIDR}}, not the string "10.0.0.0/8"`)},
		},
		{
			"names normalise to the same Talos rule", only(edit(t, openstackBase,
				set("security.Office", "{port: 22, hosts: {}}"), set("security.office", "{port: 23, hosts: {}}"))), none,
			config.Problems{inCluster("security.office", "security.office and security.Office both become the Talos rule security-office; rename one")},
		},
	})
}

func TestValidate_SecurityRulesResolve(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, openstackBase, set("security", `{kubernetes: {vpn: 100.64.0.0/10}, talos: {}, http: {port: 80, hosts: {}},
		https: {hosts: {all: 0.0.0.0/0}}, metrics: {port: "9100", hosts: {mon: 192.0.2.7}}, "Web UI": {port: 8443}}`)))
	want := config.SecurityRules{
		{Name: "kubernetes", Port: 6443, Hosts: []config.SecurityHost{{Label: "vpn", CIDR: mustPrefix(t, "100.64.0.0/10")}}},
		{Name: "talos", Port: 50000, Hosts: []config.SecurityHost{}},
		{Name: "http", Port: 80, Hosts: []config.SecurityHost{}},
		{Name: "https", Port: 443, Hosts: []config.SecurityHost{{Label: "all", CIDR: mustPrefix(t, "0.0.0.0/0")}}},
		{Name: "metrics", Port: 9100, Hosts: []config.SecurityHost{{Label: "mon", CIDR: mustPrefix(t, "192.0.2.7/32")}}},
		{Name: "Web UI", Port: 8443},
	}
	if d := cmp.Diff(want, c.Security, netipOpts()); d != "" {
		t.Errorf("security (-want +got):\n%s", d)
	}
	if !c.Security[3].Hosts[0].Open() || c.Security[0].Hosts[0].Open() {
		t.Errorf("Open() wrong")
	}
	if got := c.Security[5].TalosName(); got != "security-web-ui" {
		t.Errorf("TalosName = %q, want security-web-ui", got)
	}
}
