package firewall_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/firewall"
)

const (
	clusterL2 = "192.168.0.0/21"
	metalL2   = "172.29.22.0/24"
	otherL2   = "172.29.23.0/24"
	tailnet   = "100.64.0.0/10"
	office    = "203.0.113.0/24"
)

const (
	open80  = "open-tcp-80 tcp 80 <- 0.0.0.0/0"
	open443 = "open-tcp-443 tcp 443 <- 0.0.0.0/0"
)

// base is what every single-L2 node gets whatever cluster.yaml says.
func base() []string {
	return []string{
		"NetworkDefaultActionConfig ingress=block",
		"cluster-tcp tcp 1-65535 <- " + clusterL2,
		"cluster-udp udp 1-65535 <- " + clusterL2,
		"dhcp-client udp 68 <- 0.0.0.0/0",
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// r builds a resolved security rule; hosts alternate label, CIDR.
func r(name string, port int, hosts ...string) config.SecurityRule {
	rule := config.SecurityRule{Name: name, Port: port}
	for i := 0; i+1 < len(hosts); i += 2 {
		rule.Hosts = append(rule.Hosts, config.SecurityHost{Label: hosts[i], CIDR: pfx(hosts[i+1])})
	}
	return rule
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestDocuments(t *testing.T) {
	t.Parallel()
	one := []netip.Prefix{pfx(clusterL2)}
	cases := []struct {
		name string
		in   firewall.Input
		want []string
	}{
		// Seed 001 ports table, row by row.
		{"table: tcp/6443 from the kubernetes rule's hosts", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("kubernetes", 6443, "tailscale", tailnet, "office vpn", office)},
		}, join(base(), []string{open80, open443, "security-kubernetes tcp 6443 <- " + tailnet + ", " + office})},
		{"table: tcp/50000 from the talos rule's hosts", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("talos", 50000, "tailscale", tailnet)},
		}, join(base(), []string{open80, open443, "security-talos tcp 50000 <- " + tailnet})},
		{"table: tcp/80 and tcp/443 open to everyone while unclaimed", firewall.Input{
			ClusterCIDRs: one,
		}, join(base(), []string{open80, open443})},
		{"table: any other port from a named rule with an explicit port", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("metrics", 9100, "office vpn", office)},
		}, join(base(), []string{open80, open443, "security-metrics tcp 9100 <- " + office})},
		{"table: everything between nodes on network.cidr", firewall.Input{
			ClusterCIDRs: one,
		}, join(base(), []string{open80, open443})},
		{"table: udp/41641 from anyone with a tailscale section", firewall.Input{
			ClusterCIDRs: one, Tailscale: true,
		}, join(base(), []string{"tailscale udp 41641 <- 0.0.0.0/0", open80, open443})},
		{"table: ICMP, loopback, established and pod traffic are Talos built-ins (no document)", firewall.Input{
			ClusterCIDRs: one,
		}, join(base(), []string{open80, open443})},

		// Reference rules (§2.3 security).
		{"defaults: no kubernetes or talos rule leaves 6443 and 50000 to the cluster L2 only", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{},
		}, join(base(), []string{open80, open443})},
		{"https with hosts claims 443 and restricts it", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("https", 443, "office vpn", office)},
		}, join(base(), []string{open80, "security-https tcp 443 <- " + office})},
		{"http with hosts claims 80", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("http", 80, "office vpn", office)},
		}, join(base(), []string{open443, "security-http tcp 80 <- " + office})},
		{"a claim is keyed on the port, not the name", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("web", 443, "office vpn", office)},
		}, join(base(), []string{open80, "security-web tcp 443 <- " + office})},
		{"a claim with empty hosts closes the port to everyone", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("http", 80), r("https", 443)},
		}, base()},
		{"a rule with empty hosts emits nothing (closed)", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("metrics", 9100), r("kubernetes", 6443)},
		}, join(base(), []string{open80, open443})},
		{"0.0.0.0/0 is open to everyone", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("kubernetes", 6443, "anyone", "0.0.0.0/0")},
		}, join(base(), []string{open80, open443, "security-kubernetes tcp 6443 <- 0.0.0.0/0"})},
		{"rules keep file order; names normalise", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{
				r("talos", 50000, "tailscale", tailnet), r("Office VPN_ssh", 2222, "office", office), r("kubernetes", 6443, "tailscale", tailnet),
			},
		}, join(base(), []string{
			open80, open443, "security-talos tcp 50000 <- " + tailnet, "security-office-vpn-ssh tcp 2222 <- " + office,
			"security-kubernetes tcp 6443 <- " + tailnet,
		})},
		{"duplicate host CIDRs appear once", firewall.Input{
			ClusterCIDRs: one, Security: config.SecurityRules{r("talos", 50000, "a", tailnet, "b", tailnet, "c", office)},
		}, join(base(), []string{open80, open443, "security-talos tcp 50000 <- " + tailnet + ", " + office})},
		{"tailscale off: no udp/41641", firewall.Input{
			ClusterCIDRs: one, Tailscale: false,
		}, join(base(), []string{open80, open443})},

		// Several L2s (metal groups) and KubeSpan.
		{"kubespan with one L2: no document", firewall.Input{
			ClusterCIDRs: one, Kubespan: true,
		}, join(base(), []string{open80, open443})},
		{"kubespan across L2s: every L2 intra-cluster, WireGuard from the others", firewall.Input{
			ClusterCIDRs: []netip.Prefix{pfx(clusterL2), pfx(metalL2)}, Kubespan: true,
		}, []string{
			"NetworkDefaultActionConfig ingress=block",
			"cluster-tcp tcp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"cluster-udp udp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"dhcp-client udp 68 <- 0.0.0.0/0",
			"kubespan udp 51820 <- " + metalL2,
			open80, open443,
		}},
		{"kubespan on a metal node keyed on its own L2", firewall.Input{
			ClusterCIDRs: []netip.Prefix{pfx(clusterL2), pfx(metalL2), pfx(otherL2)}, NodeCIDR: pfx(metalL2), Kubespan: true,
		}, []string{
			"NetworkDefaultActionConfig ingress=block",
			"cluster-tcp tcp 1-65535 <- " + clusterL2 + ", " + metalL2 + ", " + otherL2,
			"cluster-udp udp 1-65535 <- " + clusterL2 + ", " + metalL2 + ", " + otherL2,
			"dhcp-client udp 68 <- 0.0.0.0/0",
			"kubespan udp 51820 <- " + clusterL2 + ", " + otherL2,
			open80, open443,
		}},
		{"a node L2 missing from the list joins the intra-cluster rules", firewall.Input{
			ClusterCIDRs: []netip.Prefix{pfx(clusterL2)}, NodeCIDR: pfx(metalL2), Kubespan: true, Tailscale: true,
		}, []string{
			"NetworkDefaultActionConfig ingress=block",
			"cluster-tcp tcp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"cluster-udp udp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"dhcp-client udp 68 <- 0.0.0.0/0",
			"tailscale udp 41641 <- 0.0.0.0/0",
			"kubespan udp 51820 <- " + clusterL2,
			open80, open443,
		}},
		{"a metal group on the cluster L2 is no second L2", firewall.Input{
			ClusterCIDRs: []netip.Prefix{pfx(clusterL2), pfx(clusterL2)}, NodeCIDR: pfx(clusterL2), Kubespan: true,
		}, join(base(), []string{open80, open443})},
		{"kubespan off: no WireGuard port even across L2s", firewall.Input{
			ClusterCIDRs: []netip.Prefix{pfx(clusterL2), pfx(metalL2)},
		}, []string{
			"NetworkDefaultActionConfig ingress=block",
			"cluster-tcp tcp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"cluster-udp udp 1-65535 <- " + clusterL2 + ", " + metalL2,
			"dhcp-client udp 68 <- 0.0.0.0/0",
			open80, open443,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, cp := range []bool{false, true} {
				in := tc.in
				in.ControlPlane = cp // one firewall for every role
				docs, err := firewall.Documents(in)
				if err != nil {
					t.Fatalf("Documents(controlPlane=%v): %v", cp, err)
				}
				if diff := cmp.Diff(tc.want, summarise(t, docs)); diff != "" {
					t.Errorf("Documents(controlPlane=%v) (-want +got):\n%s", cp, diff)
				}
			}
		})
	}
}

func TestDocuments_Refused(t *testing.T) {
	t.Parallel()
	one := []netip.Prefix{pfx(clusterL2)}
	cases := []struct {
		name string
		in   firewall.Input
		want string
	}{
		{"two names normalising alike", firewall.Input{ClusterCIDRs: one, Security: config.SecurityRules{
			r("Office VPN", 8443, "o", office), r("office-vpn", 9443, "o", office),
		}}, "security.Office VPN and security.office-vpn both become the Talos firewall rule security-office-vpn; rename one"},
		{"a collision with a closed rule", firewall.Input{ClusterCIDRs: one, Security: config.SecurityRules{
			r("db.main", 5432), r("db_main", 5433, "o", office),
		}}, "security.db.main and security.db_main both become the Talos firewall rule security-db-main; rename one"},
		{
			"an unresolved port",
			firewall.Input{ClusterCIDRs: one, Security: config.SecurityRules{r("metrics", 0, "o", office)}},
			"security.metrics: port 0 is not a resolved port 1-65535 (load cluster.yaml through config.Load)",
		},
		{"no cluster L2", firewall.Input{}, "no cluster CIDR given (network.cluster.cidr is required)"},
		{
			"a cluster CIDR with host bits",
			firewall.Input{ClusterCIDRs: []netip.Prefix{pfx("192.168.0.5/21")}},
			"cluster CIDR 192.168.0.5/21 is not a network address (did you mean 192.168.0.0/21?)",
		},
		{
			"a host CIDR with host bits",
			firewall.Input{ClusterCIDRs: one, Security: config.SecurityRules{r("talos", 50000, "me", "100.64.0.7/10")}},
			"security.talos.me: 100.64.0.7/10 is not a network address (did you mean 100.64.0.0/10?)",
		},
		{"an invalid host CIDR", firewall.Input{ClusterCIDRs: one, Security: config.SecurityRules{
			{Name: "talos", Port: 50000, Hosts: []config.SecurityHost{{Label: "me"}}},
		}}, `security.talos.me: "invalid Prefix" is not a valid CIDR`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			docs, err := firewall.Documents(tc.in)
			if err == nil {
				t.Fatalf("Documents = %d documents, want error %q", len(docs), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q\nwant    %q", err, tc.want)
			}
		})
	}
}

// TestDocuments_Scaffold renders the firewall of the cluster.yaml that init
// writes: both APIs from the tailnet only, tailscale's port, 80/443 open.
func TestDocuments_Scaffold(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{config.ProviderOpenStack, config.ProviderProxmox} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			clusterYAML, secretsYAML := config.Scaffold("mycluster", provider)
			dir := t.TempDir()
			write(t, filepath.Join(dir, config.ClusterFile), clusterYAML)
			write(t, filepath.Join(dir, config.SecretsFile), secretsYAML)
			c, err := config.Load(dir, config.LoadOptions{})
			if err != nil {
				t.Fatalf("load scaffold: %v", err)
			}
			docs, err := firewall.Documents(firewall.Input{
				Security: c.Security, ClusterCIDRs: []netip.Prefix{c.Network.Cluster.CIDR},
				Tailscale: c.Tailscale != nil, Kubespan: c.Talos.KubeSpan,
			})
			if err != nil {
				t.Fatalf("Documents: %v", err)
			}
			l2 := c.Network.Cluster.CIDR.String()
			want := []string{
				"NetworkDefaultActionConfig ingress=block",
				"cluster-tcp tcp 1-65535 <- " + l2,
				"cluster-udp udp 1-65535 <- " + l2,
				"dhcp-client udp 68 <- 0.0.0.0/0",
				"tailscale udp 41641 <- 0.0.0.0/0",
				open80, open443,
				"security-kubernetes tcp 6443 <- " + tailnet,
				"security-talos tcp 50000 <- " + tailnet,
			}
			if diff := cmp.Diff(want, summarise(t, docs)); diff != "" {
				t.Errorf("scaffold firewall (-want +got):\n%s", diff)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ruleDoc is the part of a firewall document the tests compare.
type ruleDoc struct {
	Kind         string `yaml:"kind"`
	APIVersion   string `yaml:"apiVersion"`
	Name         string `yaml:"name"`
	PortSelector struct {
		Ports    []string `yaml:"ports"`
		Protocol string   `yaml:"protocol"`
	} `yaml:"portSelector"`
	Ingress yaml.Node `yaml:"ingress"`
}

// summarise turns documents into one line each: "name proto ports <- subnets".
func summarise(t *testing.T, docs []string) []string {
	t.Helper()
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		if strings.Contains(d, "---") {
			t.Errorf("document contains a separator:\n%s", d)
		}
		var doc ruleDoc
		if err := yaml.Unmarshal([]byte(d), &doc); err != nil {
			t.Fatalf("document does not parse: %v\n%s", err, d)
		}
		if doc.APIVersion != "v1alpha1" {
			t.Errorf("apiVersion = %q, want v1alpha1", doc.APIVersion)
		}
		if doc.Kind == "NetworkDefaultActionConfig" {
			out = append(out, fmt.Sprintf("%s ingress=%s", doc.Kind, doc.Ingress.Value))
			continue
		}
		if doc.Kind != "NetworkRuleConfig" {
			t.Fatalf("unexpected kind %q", doc.Kind)
		}
		var ingress []struct {
			Subnet string `yaml:"subnet"`
		}
		if err := doc.Ingress.Decode(&ingress); err != nil {
			t.Fatalf("ingress: %v", err)
		}
		var subnets []string
		for _, i := range ingress {
			subnets = append(subnets, i.Subnet)
		}
		out = append(out, fmt.Sprintf("%s %s %s <- %s", doc.Name, doc.PortSelector.Protocol,
			strings.Join(doc.PortSelector.Ports, ","), strings.Join(subnets, ", ")))
	}
	return out
}
