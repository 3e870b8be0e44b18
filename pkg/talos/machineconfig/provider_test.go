package machineconfig_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// named returns the document of kind named name, or nil.
func named(docs []map[string]any, kind, name string) map[string]any {
	for _, d := range docsOf(docs, kind) {
		if d["name"] == name {
			return d
		}
	}
	return nil
}

func TestOpenStackContribution(t *testing.T) {
	t.Parallel()
	jumbo := strings.Replace(openstackYAML, "    cidr: 192.168.0.0/21\n", "    cidr: 192.168.0.0/21\n    mtu: 8950\n", 1)
	cases := []struct {
		name    string
		text    string
		host    string
		noMAC   bool
		link    string
		linkDoc map[string]any
	}{
		{"control plane by MAC", openstackYAML, "demo-controlplane-02", false, "private", nil},
		{"worker without a known MAC uses eth0", openstackYAML, "demo-gpu-01", true, "eth0", nil},
		{"jumbo MTU clamps the default route", jumbo, "demo-controlplane-01", false, "private", map[string]any{
			"apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "private", "mtu": 8950,
			"routes": []any{map[string]any{"gateway": "192.168.0.1", "metric": 1024, "mtu": 1500}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := openstackInput(t, tc.text)
			n := node(t, in.Cluster, tc.host, talos114)
			if tc.noMAC {
				n.MACs = nil
			}
			contrib, err := machineconfig.OpenStackContribution(&in, n)
			if err != nil {
				t.Fatal(err)
			}
			if contrib.InstallDisk != "/dev/vda" || contrib.Platform != "openstack" || contrib.MaxUserData != machineconfig.NovaUserDataLimit {
				t.Errorf("disk %q platform %q max %d, want /dev/vda openstack %d", contrib.InstallDisk, contrib.Platform, contrib.MaxUserData, machineconfig.NovaUserDataLimit)
			}
			if d := cmp.Diff(map[string]string{"ncsa/project": "hpc research"}, contrib.Labels); d != "" {
				t.Errorf("provider labels (-want +got):\n%s", d)
			}
			docs := documents(t, mustGenerate(t, in, n).Bytes())
			alias := named(docs, "LinkAliasConfig", "private")
			if (alias != nil) == tc.noMAC {
				t.Errorf("LinkAliasConfig private = %v with MAC known %v", alias, !tc.noMAC)
			}
			if alias != nil && dig(alias, "selector", "match") != `mac(link.permanent_addr) == "fa:16:3e:00:00:`+tc.host[len(tc.host)-2:]+`"` {
				t.Errorf("alias selector %v does not select the port's MAC in lowercase", dig(alias, "selector", "match"))
			}
			if named(docs, "DHCPv4Config", tc.link) == nil {
				t.Errorf("no DHCPv4Config on %s", tc.link)
			}
			if d := cmp.Diff(tc.linkDoc, named(docs, "LinkConfig", tc.link)); d != "" {
				t.Errorf("LinkConfig %s (-want +got):\n%s", tc.link, d)
			}
			vips := docsOf(docs, "Layer2VIPConfig")
			if strings.Contains(tc.host, "controlplane") {
				if len(vips) != 1 || vips[0]["name"] != "192.168.0.5" || vips[0]["link"] != tc.link {
					t.Errorf("Layer2VIPConfig = %v, want 192.168.0.5 on %s", vips, tc.link)
				}
			} else if len(vips) != 0 {
				t.Errorf("worker has a Layer2VIPConfig: %v", vips)
			}
		})
	}
	t.Run("control plane without a VIP", func(t *testing.T) {
		t.Parallel()
		in := openstackInput(t, openstackYAML)
		in.VIP = netip.Addr{}
		_, err := machineconfig.Generate(in, node(t, in.Cluster, "demo-controlplane-01", talos113))
		if err == nil || !strings.Contains(err.Error(), "no API VIP") {
			t.Fatalf("Generate = %v, want a missing VIP refused", err)
		}
	})
}

func TestProxmoxContribution_Bridge(t *testing.T) {
	t.Parallel()
	jumboGW := strings.Replace(bridgeYAML, "    kubeapi_vip: 192.168.0.2\n", "    kubeapi_vip: 192.168.0.2\n    mtu: 9000\n    gateway: 192.168.0.1\n", 1)
	jumbo := strings.Replace(bridgeYAML, "    kubeapi_vip: 192.168.0.2\n", "    kubeapi_vip: 192.168.0.2\n    mtu: 9000\n", 1)
	cases := []struct {
		name string
		text string
		host string
		link map[string]any
	}{
		{"control plane, standard MTU", bridgeYAML, "br-controlplane-01", nil},
		{"jumbo with gateway", jumboGW, "br-worker-02", map[string]any{
			"apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "private", "mtu": 9000,
			"routes": []any{map[string]any{"gateway": "192.168.0.1", "metric": 1024, "mtu": 1500}},
		}},
		{"jumbo without gateway states only the MTU", jumbo, "br-worker-01", map[string]any{
			"apiVersion": "v1alpha1", "kind": "LinkConfig", "name": "private", "mtu": 9000,
		}},
	}
	for _, tc := range cases {
		for _, talos := range []string{talos113, talos114} {
			t.Run(tc.name+"/"+talos, func(t *testing.T) {
				t.Parallel()
				in := proxmoxInput(t, tc.text)
				n := node(t, in.Cluster, tc.host, talos)
				contrib, err := machineconfig.ProxmoxContribution(&in, n)
				if err != nil {
					t.Fatal(err)
				}
				if contrib.InstallDisk != "/dev/sda" || contrib.Platform != "nocloud" || contrib.MaxUserData != 0 {
					t.Errorf("disk %q platform %q max %d, want /dev/sda nocloud 0", contrib.InstallDisk, contrib.Platform, contrib.MaxUserData)
				}
				docs := documents(t, mustGenerate(t, in, n).Bytes())
				wantMatch := `mac(link.permanent_addr) == "` + naming.MAC("br", tc.host, 0) + `"`
				if got := dig(named(docs, "LinkAliasConfig", "private"), "selector", "match"); got != wantMatch {
					t.Errorf("private alias selector %v, want %s", got, wantMatch)
				}
				if named(docs, "DHCPv4Config", "private") == nil {
					t.Errorf("no DHCPv4Config on private")
				}
				if d := cmp.Diff(tc.link, named(docs, "LinkConfig", "private")); d != "" {
					t.Errorf("LinkConfig private (-want +got):\n%s", d)
				}
				for _, r := range docsOf(docs, "ResolverConfig") {
					if r["nameservers"] != nil {
						t.Errorf("DHCP-backed bridge got static resolvers %v", r["nameservers"])
					}
				}
				if len(docsOf(docs, "LinkAliasConfig")) != 1 {
					t.Errorf("bridge without network.external aliases %d links, want 1", len(docsOf(docs, "LinkAliasConfig")))
				}
				vips := docsOf(docs, "Layer2VIPConfig")
				if strings.Contains(tc.host, "controlplane") != (len(vips) == 1 && vips[0]["link"] == "private" && vips[0]["name"] == "192.168.0.2") {
					t.Errorf("Layer2VIPConfig = %v for %s", vips, tc.host)
				}
			})
		}
	}
}

func TestProxmoxContribution_SDNAndExternal(t *testing.T) {
	t.Parallel()
	noPool := strings.Replace(proxmoxYAML, "    ingress_pool: 203.0.113.75-203.0.113.78\n", "", 1)
	cases := []struct {
		name        string
		text        string
		host        string
		address     string
		routes      bool
		rules       []string
		returnPath  bool
		vipExternal bool
	}{
		{"control plane, external VIP and ingress pool", proxmoxYAML, "lab-controlplane-01", "192.168.100.11/24", true, []string{"1000", "1001"}, true, true},
		{"worker with ingress pool", proxmoxYAML, "lab-worker-03", "192.168.100.63/24", true, []string{"1001"}, true, false},
		{"worker without ingress pool", noPool, "lab-worker-01", "192.168.100.61/24", false, nil, false, false},
		{"control plane without ingress pool", noPool, "lab-controlplane-03", "192.168.100.13/24", true, []string{"1000"}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := proxmoxInput(t, tc.text)
			c := mustGenerate(t, in, node(t, in.Cluster, tc.host, talos114))
			docs := documents(t, c.Bytes())
			priv := named(docs, "LinkConfig", "private")
			if got := dig(priv, "addresses"); cmp.Diff([]any{map[string]any{"address": tc.address}}, got) != "" {
				t.Errorf("private addresses %v, want %s (SDN layout)", got, tc.address)
			}
			if got := dig(priv, "routes"); cmp.Diff([]any{map[string]any{"gateway": "192.168.100.1", "metric": 1024, "mtu": 1500}}, got) != "" {
				t.Errorf("private routes %v, want the anycast gateway clamped to 1500", got)
			}
			res := docsOf(docs, "ResolverConfig")
			if len(res) != 1 || cmp.Diff([]any{map[string]any{"address": "192.0.2.53"}}, res[0]["nameservers"]) != "" {
				t.Errorf("ResolverConfig %v, want nameserver 192.0.2.53", res)
			}
			if named(docs, "DHCPv4Config", "private") != nil {
				t.Errorf("static SDN node also runs DHCP on private")
			}
			ext := named(docs, "LinkConfig", "external")
			anchor, err := naming.Anchor("lab", tc.host, netip.MustParsePrefix("169.254.32.0/20"))
			if err != nil {
				t.Fatal(err)
			}
			if got := dig(ext, "addresses"); cmp.Diff([]any{map[string]any{"address": anchor.String()}}, got) != "" {
				t.Errorf("external addresses %v, want the anchor %s", got, anchor)
			}
			var wantRoutes any = []any{
				map[string]any{"destination": "203.0.113.0/25", "table": "100"},
				map[string]any{"gateway": "203.0.113.1", "table": "100"},
			}
			if !tc.routes {
				wantRoutes = nil
			}
			if d := cmp.Diff(wantRoutes, dig(ext, "routes")); d != "" {
				t.Errorf("external routes (-want +got):\n%s", d)
			}
			var rules []string
			for _, r := range docsOf(docs, "RoutingRuleConfig") {
				rules = append(rules, r["name"].(string))
			}
			if d := cmp.Diff(tc.rules, rules); d != "" {
				t.Errorf("routing rules (-want +got):\n%s", d)
			}
			if got := len(docsOf(docs, "KubeStaticPodConfig")) == 1; got != tc.returnPath {
				t.Errorf("return-path pod present %v, want %v", got, tc.returnPath)
			}
			vips := docsOf(docs, "Layer2VIPConfig")
			if tc.vipExternal && (len(vips) != 1 || vips[0]["link"] != "external" || vips[0]["name"] != "203.0.113.79") {
				t.Errorf("Layer2VIPConfig %v, want 203.0.113.79 on external", vips)
			}
		})
	}
}

func TestReturnPathPodUsesTheNodesKubernetesVersion(t *testing.T) {
	t.Parallel()
	for _, talos := range []string{talos113, talos114} {
		t.Run(talos, func(t *testing.T) {
			t.Parallel()
			in := proxmoxInput(t, proxmoxYAML)
			n := node(t, in.Cluster, "lab-worker-02", talos)
			n.KubernetesVersion = "v1.35.4" // the running version of an existing node (I-R12)
			b := string(mustGenerate(t, in, n).Bytes())
			if !strings.Contains(b, "image: registry.k8s.io/kube-proxy:v1.35.4") || strings.Contains(b, "kube-proxy:v1.36.1") {
				t.Errorf("return-path pod does not use kube-proxy at the node's v1.35.4")
			}
			if !strings.Contains(b, naming.MAC("lab", "lab-worker-02", 1)) {
				t.Errorf("return-path script does not look for the external NIC's MAC")
			}
		})
	}
}

func TestGenerate_RefusesBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edit  func(*machineconfig.Input, *machineconfig.Node)
		error string
	}{
		{"no secrets", func(in *machineconfig.Input, _ *machineconfig.Node) { in.Secrets = nil }, "no cluster secrets"},
		{"no advertised address", func(in *machineconfig.Input, _ *machineconfig.Node) { in.AdvertisedAddress = "" }, "no advertised kubernetes API address"},
		{"no installer", func(in *machineconfig.Input, _ *machineconfig.Node) { delete(in.Installers, "worker") }, `no installer image for pool "worker"`},
		{"unknown pool", func(_ *machineconfig.Input, n *machineconfig.Node) { n.Machine.Pool = "gpu" }, `pool "gpu", which cluster.yaml does not define`},
		{"bad MAC", func(_ *machineconfig.Input, n *machineconfig.Node) { n.MACs = []string{"not-a-mac"} }, `MAC "not-a-mac"`},
		{"old talos", func(_ *machineconfig.Input, n *machineconfig.Node) { n.TalosVersion = "v1.11.0" }, "older than v1.13"},
		{"bad provider patch name", func(in *machineconfig.Input, _ *machineconfig.Node) {
			in.Contribute = func(in *machineconfig.Input, n machineconfig.Node) (machineconfig.Contribution, error) {
				c, err := machineconfig.ProxmoxContribution(in, n)
				c.Patches = append(c.Patches, machineconfig.NamedPatch{Name: "../escape", YAML: "machine: {}\n"})
				return c, err
			}
		}, `provider patch name "../escape"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := proxmoxInput(t, bridgeYAML)
			n := node(t, in.Cluster, "br-worker-01", talos113)
			tc.edit(&in, &n)
			_, err := machineconfig.Generate(in, n)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("Generate = %v, want an error containing %q", err, tc.error)
			}
		})
	}
}
