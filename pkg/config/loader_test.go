package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

func TestLoad_FileShapeProblems(t *testing.T) {
	t.Parallel()
	runProblemCases(t, []problemCase{
		{
			"list instead of mapping", only("- a\n- b\n"),
			config.LoadOptions{},
			config.Problems{inCluster("", "cluster.yaml must be a YAML mapping of keys, not a list")},
		},
		{
			"scalar instead of mapping", only("hello\n"),
			config.LoadOptions{},
			config.Problems{inCluster("", `cluster.yaml must be a YAML mapping of keys, not the string "hello"`)},
		},
		{
			"duplicate key", only(openstackBase + "name: other\n"),
			config.LoadOptions{},
			config.Problems{inCluster("name", "name is set twice in this mapping (lines 1 and 24)")},
		},
		{
			"unsupported tag", only(edit(t, openstackBase, set("name", "!foo demo"))),
			config.LoadOptions{},
			config.Problems{inCluster("name", "name uses the YAML tag !foo, which talosc does not support")},
		},
		{
			"unsupported tag on a mapping", only(edit(t, openstackBase, set("tailscale", "!foo {a: 1}"))),
			config.LoadOptions{},
			config.Problems{
				inCluster("tailscale", "tailscale uses the YAML tag !foo, which talosc does not support"),
				inCluster("tailscale.a", "tailscale.a is not a valid key (valid keys: login_server, auth_key)"),
			},
		},
		{
			"merge key of a scalar", only(openstackBase + "tags: {<<: 1}\n"),
			config.LoadOptions{},
			config.Problems{inCluster("tags", "tags: the merge key << must refer to a mapping")},
		},
	})
}

func TestLoad_ParseErrorsNameThePath(t *testing.T) {
	t.Parallel()
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'i'; i++ {
		laughs += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	cases := []struct{ name, yaml, want string }{
		{"syntax error", "name: [demo\n", "yaml: line 1: did not find expected ',' or ']'"},
		{"two documents", openstackBase + "---\nname: x\n", "expected a single YAML document, found more than one"},
		{"alias cycle", "name: &a [*a]\n", "line 1: alias *a refers to the value that contains it"},
		{"billion laughs", laughs, "too many values after expanding aliases"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDir(t, only(tc.yaml))
			_, err := config.Load(dir, config.LoadOptions{})
			var probs config.Problems
			if !errors.As(err, &probs) || len(probs) != 1 {
				t.Fatalf("Load: %v, want one problem", err)
			}
			want := "could not parse " + filepath.Join(dir, config.ClusterFile) + ": " + tc.want
			if probs[0].Message != want || probs[0].File != config.ClusterFile {
				t.Errorf("problem = %+v, want message %q", probs[0], want)
			}
		})
	}
}

func TestLoad_MissingClusterFileIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := config.Load(t.TempDir(), config.LoadOptions{})
	var probs config.Problems
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &probs) {
		t.Errorf("Load of an empty dir: %v, want a plain error wrapping fs.ErrNotExist", err)
	}
}

func TestLoad_TopLevelKeys(t *testing.T) {
	t.Parallel()
	plugins := config.LoadOptions{PluginSections: map[string]string{"rancher": "rancher", "charts": "charts"}}
	unknown := func(keys string) config.Problem {
		return inCluster("", "unknown key(s): "+keys+"; talosc does not use them (is a plugin that uses them missing from PATH?)")
	}
	runProblemCases(t, []problemCase{
		{"unknown key", only(openstackBase + "foo: 1\nbar: {}\n"), config.LoadOptions{}, config.Problems{unknown("foo, bar")}},
		{"unknown key with null value", only(openstackBase + "foo:\n"), config.LoadOptions{}, config.Problems{unknown("foo")}},
		{
			"typo suggests the key", only(openstackBase + "tailscal: {}\n"),
			config.LoadOptions{},
			config.Problems{unknown("tailscal (did you mean tailscale?)")},
		},
		{
			"plugin section without its plugin", only(openstackBase + "rancher: {url: https://r}\n"),
			config.LoadOptions{},
			config.Problems{unknown("rancher")},
		},
		{
			"plugin section typo suggests the plugin key", only(openstackBase + "ranchr: {}\n"), plugins,
			config.Problems{unknown("ranchr (did you mean rancher?)")},
		},
		{"installed plugin section", only(openstackBase + "rancher: {url: https://r}\n"), plugins, nil},
		{
			"metal is refused", only(openstackBase + "metal:\n  rack1: {role: worker}\n"),
			config.LoadOptions{},
			config.Problems{inCluster("metal", "metal: bare-metal machines are not supported yet by talosc; remove the metal section (support is planned)")},
		},
		{"empty metal section is absent", only(openstackBase + "metal:\n  # rack1: {}\n"), config.LoadOptions{}, nil},
	})
}

func TestLoad_PluginSectionsAreJSONValues(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		config.ClusterFile: openstackBase + "include: [secrets.yaml]\n" +
			"charts:\n  ceph: {enabled: false, replicas: 3, ratio: 0.5, list: [a, 1, ~], big: 99999999999999999999, inf: .inf}\n" +
			"argocd:\n",
		config.SecretsFile: "charts:\n  ceph: {userKey: AQC}\n",
	}
	opts := config.LoadOptions{PluginSections: map[string]string{"charts": "charts", "argocd": "argocd"}}
	c, probs := load(t, files, opts)
	if probs != nil {
		t.Fatal(probs)
	}
	want := map[string]any{"charts": map[string]any{"ceph": map[string]any{
		"enabled": false, "replicas": 3, "ratio": 0.5, "list": []any{"a", 1, nil},
		"big": 1e20, "inf": ".inf", "userKey": "AQC",
	}}}
	if d := cmp.Diff(want, c.Plugins); d != "" {
		t.Errorf("Plugins (-want +got):\n%s", d)
	}
}

func TestLoad_StrictSections(t *testing.T) {
	t.Parallel()
	bad := func(path, hint string) config.Problem {
		return inCluster(path, path+" is not a valid key; did you mean "+hint+"?")
	}
	runProblemCases(t, []problemCase{
		{
			"talos.extensons", only(edit(t, openstackBase, set("talos.extensons", "[]"))),
			config.LoadOptions{},
			config.Problems{bad("talos.extensons", "extensions")},
		},
		{
			"network.dnss", only(edit(t, openstackBase, set("network.dnss", "[1.1.1.1]"))),
			config.LoadOptions{},
			config.Problems{bad("network.dnss", "dns")},
		},
		{
			"openstack.regoin", only(edit(t, openstackBase, set("openstack.regoin", "RegionTwo"))),
			config.LoadOptions{},
			config.Problems{bad("openstack.regoin", "region")},
		},
		{
			"proxmox.network.clustr", only(edit(t, proxmoxBase, set("proxmox.network.clustr", "{bridge: vmbr1}"))),
			config.LoadOptions{},
			config.Problems{bad("proxmox.network.clustr", "cluster")},
		},
		{
			"network.cluster.vlna", only(edit(t, proxmoxBase, set("network.cluster.vlna", "10"))),
			config.LoadOptions{},
			config.Problems{bad("network.cluster.vlna", "vlan")},
		},
		{
			"sdn.exit_ndoes", only(edit(t, sdnExample, set("proxmox.network.cluster.sdn.exit_ndoes", "[pve001]"))),
			config.LoadOptions{},
			config.Problems{bad("proxmox.network.cluster.sdn.exit_ndoes", "exit_nodes")},
		},
		{
			"network.external.gatway", only(edit(t, sdnExample, set("network.external.gatway", "203.0.113.1"))),
			config.LoadOptions{},
			config.Problems{bad("network.external.gatway", "gateway")},
		},
		{
			"miscapped key", only(edit(t, openstackBase, set("talos.Version", "v1.13.8"))),
			config.LoadOptions{},
			config.Problems{bad("talos.Version", "version")},
		},
		{
			"pool key", only(edit(t, openstackBase, set("workers.worker.flavour", "x"))),
			config.LoadOptions{},
			config.Problems{bad("workers.worker.flavour", "flavor")},
		},
		{
			"no close key lists the valid ones", only(edit(t, openstackBase, set("talos.foo", "1"))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.foo", "talos.foo is not a valid key (valid keys: version, extensions, config_patches, kubespan, cloud_controller_manager, image_factory)")},
		},
		{
			"tailscale key", only(edit(t, openstackBase, set("tailscale.authkey", "x"))),
			config.LoadOptions{},
			config.Problems{bad("tailscale.authkey", "auth_key")},
		},
	})
}

func TestLoad_FreeformMapsStayOpen(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, openstackBase,
		set("tags", "{team: platform, Any Key: 1, flag: true, ratio: 1.5}"),
		set("workers.worker.tags", "{gpu: nvidia}"),
		set("security.kubernetes", "{office vpn: 203.0.113.0/24, Whatever.Label: 10.0.0.0/8}"),
		set("talos.config_patches", "[{machine: {sysctls: {a: b}}}, 'cluster: {x: 1}']"),
	))
	wantTags := config.Labels{"team": "platform", "Any Key": "1", "flag": "True", "ratio": "1.5"}
	if d := cmp.Diff(wantTags, c.Tags); d != "" {
		t.Errorf("tags (-want +got):\n%s", d)
	}
	if got := c.Workers[0].Tags["gpu"]; got != "nvidia" {
		t.Errorf("pool tag gpu = %q", got)
	}
	wantPatches := config.Patches{"machine:\n    sysctls:\n        a: b\n", "cluster: {x: 1}"}
	if d := cmp.Diff(wantPatches, c.Talos.ConfigPatches); d != "" {
		t.Errorf("config_patches (-want +got):\n%s", d)
	}
}

func TestLoad_MovedKeys(t *testing.T) {
	t.Parallel()
	moved := func(from, to string) config.Problem { return inCluster(from, from+" has moved to "+to) }
	cases := []problemCase{
		{
			"network.cidr", only(edit(t, openstackBase, set("network.cidr", "192.168.0.0/21"), del("network.cluster"))),
			config.LoadOptions{},
			config.Problems{moved("network.cidr", "network.cluster.cidr")},
		},
		{
			"proxmox cluster vlan", only(edit(t, proxmoxBase, set("proxmox.network.cluster.vlan", "10"))),
			config.LoadOptions{},
			config.Problems{moved("proxmox.network.cluster.vlan", "network.cluster.vlan")},
		},
		{
			"proxmox cluster kubeapi_vip", only(edit(t, proxmoxBase,
				set("proxmox.network.cluster.kubeapi_vip", "192.168.0.2"), del("network.cluster.kubeapi_vip"))),
			config.LoadOptions{},
			config.Problems{moved("proxmox.network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip")},
		},
		{
			"anchor_cidr under network.cluster", only(edit(t, sdnExample, set("network.cluster.anchor_cidr", "169.254.0.0/20"))),
			config.LoadOptions{},
			config.Problems{inCluster("network.cluster.anchor_cidr", "network.cluster.anchor_cidr: anchor_cidr and ingress_pool describe the externally routed network; set them under network.external")},
		},
		{
			"ingress_pool under network.cluster", only(edit(t, sdnExample, set("network.cluster.ingress_pool", "192.168.100.200-192.168.100.210"))),
			config.LoadOptions{},
			config.Problems{inCluster("network.cluster.ingress_pool", "network.cluster.ingress_pool: anchor_cidr and ingress_pool describe the externally routed network; set them under network.external")},
		},
	}
	for _, k := range []string{"cidr", "gateway", "anchor_cidr", "kubeapi_vip", "vlan", "ingress_pool"} {
		cases = append(cases, problemCase{
			"proxmox external " + k,
			only(edit(t, sdnExample, set("proxmox.network.external."+k, "1"))),
			config.LoadOptions{},
			config.Problems{moved("proxmox.network.external."+k, "network.external."+k)},
		})
	}
	runProblemCases(t, cases)
}

func TestLoad_NullIsAbsent(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, openstackBase, del("workers"))+"tags:\n  # team: platform\nworkers:\nsecurity: ~\ntailscale:\n  # login_server: https://x\n")
	if c.Tailscale != nil || c.Tags != nil || len(c.Workers) != 0 || c.Security != nil {
		t.Errorf("null sections loaded as present: tailscale=%v tags=%v workers=%v security=%v", c.Tailscale, c.Tags, c.Workers, c.Security)
	}
	c = mustLoad(t, openstackBase+"tailscale: {}\n")
	if c.Tailscale == nil || c.Tailscale.Active() {
		t.Errorf("tailscale: {} = %v, want present and inactive", c.Tailscale)
	}
	runProblemCases(t, []problemCase{
		{
			"null required section", only(edit(t, openstackBase, set("controlplane", "~"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane", "controlplane is required")},
		},
		{
			"null list item", only(edit(t, openstackBase, set("network.dns", "[8.8.8.8, ~]"))),
			config.LoadOptions{},
			config.Problems{inCluster("network.dns[1]", "network.dns[1] is empty; remove it or give it a value")},
		},
	})
}

func TestLoad_ScalarTypes(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, openstackBase, set("controlplane.count", `"5"`), set("controlplane.disk", `'40'`), set("talos.kubespan", "yes")))
	if c.ControlPlane.Count != 5 || c.ControlPlane.Disk != 40 || !c.Talos.KubeSpan {
		t.Errorf("count=%d disk=%d kubespan=%v, want 5, 40, true", c.ControlPlane.Count, c.ControlPlane.Disk, c.Talos.KubeSpan)
	}
	runProblemCases(t, []problemCase{
		{
			"boolean for an int", only(edit(t, openstackBase, set("controlplane.count", "true"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane.count", "controlplane.count must be an integer, not a boolean (true)")},
		},
		{
			"float for an int", only(edit(t, openstackBase, set("controlplane.disk", "40.5"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane.disk", "controlplane.disk must be an integer, not the number 40.5")},
		},
		{
			"word for an int", only(edit(t, openstackBase, set("controlplane.count", "three"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane.count", `controlplane.count must be an integer, not the string "three"`)},
		},
		{
			"negative digit string", only(edit(t, openstackBase, set("workers.worker.count", `"-1"`))),
			config.LoadOptions{},
			config.Problems{inCluster("workers.worker.count", `workers.worker.count must be an integer, not the string "-1"`)},
		},
		{
			"huge int", only(edit(t, openstackBase, set("controlplane.disk", "99999999999999999999"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane.disk", "controlplane.disk must be an integer, not the number 99999999999999999999")},
		},
		{
			"quoted false", only(edit(t, openstackBase, set("talos.kubespan", `"false"`))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.kubespan", `talos.kubespan must be true or false, not the string "false" (remove the quotes)`)},
		},
		{
			"number for a bool", only(edit(t, openstackBase, set("talos.kubespan", "1"))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.kubespan", "talos.kubespan must be true or false, not the number 1")},
		},
		{
			"bool for a string", only(edit(t, openstackBase, set("controlplane.flavor", "true"))),
			config.LoadOptions{},
			config.Problems{inCluster("controlplane.flavor", "controlplane.flavor must be a string, not the boolean true")},
		},
		{
			"list for a string", only(edit(t, openstackBase, set("name", "[a]"))),
			config.LoadOptions{},
			config.Problems{inCluster("name", "name must be a string, not a list")},
		},
		{
			"scalar for a list", only(edit(t, openstackBase, set("network.ntp", "pool.ntp.org"))),
			config.LoadOptions{},
			config.Problems{inCluster("network.ntp", `network.ntp must be a list, not the string "pool.ntp.org"`)},
		},
		{
			"scalar for a section", only(edit(t, openstackBase, set("talos", "v1.13.8"))),
			config.LoadOptions{},
			config.Problems{inCluster("talos", `talos must be a mapping, not the string "v1.13.8"`)},
		},
	})
}

func TestLoad_AnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, strings.Replace(proxmoxBase, "workers:\n  worker:\n    count: 2\n    cores: 8\n    memory: 16\n    disk: 100\n",
		"workers:\n  worker: &w {count: 2, cores: 8, memory: 16, disk: 100}\n  big: {<<: *w, memory: 64}\n", 1))
	want := config.Pools{
		{Name: "worker", Count: 2, Cores: 8, Memory: 16, Disk: 100},
		{Name: "big", Count: 2, Cores: 8, Memory: 64, Disk: 100},
	}
	if d := cmp.Diff(want, c.Workers); d != "" {
		t.Errorf("workers (-want +got):\n%s", d)
	}
}

func TestLoad_ReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	runProblemCases(t, []problemCase{{
		"three problems",
		only(edit(t, openstackBase, set("name", "Bad_Name"), set("controlplane.count", "0"), set("network.dnss", "[]"))),
		config.LoadOptions{},
		config.Problems{
			inCluster("network.dnss", "network.dnss is not a valid key; did you mean dns?"),
			inCluster("name", `name "Bad_Name" is not a valid cluster name: use lowercase letters, digits and '-', starting and ending with a letter or digit`),
			inCluster("controlplane.count", "controlplane.count must be at least 1, not 0"),
		},
	}})
}

func TestProblems_Error(t *testing.T) {
	t.Parallel()
	p := config.Problems{
		{File: "cluster.yaml", Line: 3, Path: "name", Message: "name is required"},
		{File: "secrets.yaml", Path: "openstack.url", Message: "not an URL"},
		{File: "x.yaml", Message: "unknown key(s): a"},
	}
	want := "cluster.yaml:3: name is required\nsecrets.yaml: openstack.url: not an URL\nx.yaml: unknown key(s): a"
	if got := p.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestLoad_CloudControllerManager(t *testing.T) {
	t.Parallel()
	if c := mustLoad(t, openstackBase); c.Talos.CloudControllerManager {
		t.Errorf("talos.cloud_controller_manager defaults to true, want false (off by default)")
	}
	if c := mustLoad(t, edit(t, proxmoxBase, set("talos.cloud_controller_manager", "true"))); !c.Talos.CloudControllerManager {
		t.Errorf("talos.cloud_controller_manager: true loaded as false")
	}
	if c := mustLoad(t, edit(t, openstackBase, set("talos.cloud_controller_manager", "null"))); c.Talos.CloudControllerManager {
		t.Errorf("talos.cloud_controller_manager: null loaded as true, want absent (false)")
	}
	runProblemCases(t, []problemCase{
		{
			"quoted true", only(edit(t, openstackBase, set("talos.cloud_controller_manager", `"true"`))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.cloud_controller_manager",
				`talos.cloud_controller_manager must be true or false, not the string "true" (remove the quotes)`)},
		},
		{
			"number", only(edit(t, openstackBase, set("talos.cloud_controller_manager", "1"))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.cloud_controller_manager", "talos.cloud_controller_manager must be true or false, not the number 1")},
		},
		{
			"misspelled", only(edit(t, openstackBase, set("talos.cloud_controller_manger", "true"))),
			config.LoadOptions{},
			config.Problems{inCluster("talos.cloud_controller_manger", "talos.cloud_controller_manger is not a valid key; did you mean cloud_controller_manager?")},
		},
		{
			"under kubernetes", only(edit(t, openstackBase, set("kubernetes.cloud_controller_manager", "true"))),
			config.LoadOptions{},
			config.Problems{inCluster("kubernetes.cloud_controller_manager", "kubernetes.cloud_controller_manager is not a valid key (valid keys: version, kubelet_repository)")},
		},
	})
}
