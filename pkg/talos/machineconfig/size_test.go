package machineconfig_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// largestOpenStack is openstackYAML grown to the largest config talosc is
// expected to deliver through Nova user_data: the Talos CCM on top of the
// inline manifests, active tailscale, disk encryption, rules security rules
// of five hosts each, and cluster and pool config_patches.
func largestOpenStack(rules int) string {
	var sec strings.Builder
	for i := range rules {
		fmt.Fprintf(&sec, "  exporter-%02d:\n    port: %d\n    hosts:\n", i, 9100+i)
		for h := range 5 {
			fmt.Fprintf(&sec, "      site %d: 10.%d.%d.0/24\n", h, i, h)
		}
	}
	text := strings.Replace(openstackYAML, "security:\n", "security:\n"+sec.String(), 1)
	text = strings.Replace(text, "talos:\n", "talos:\n  cloud_controller_manager: true\n", 1)
	clusterPatches := []string{
		"machine:\n  registries:\n    mirrors:\n      docker.io:\n        endpoints: [https://mirror.example.edu/v2/docker.io]\n      ghcr.io:\n        endpoints: [https://mirror.example.edu/v2/ghcr.io]\n",
		"machine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n    net.core.somaxconn: \"65535\"\n    fs.inotify.max_user_watches: \"1048576\"\n",
	}
	poolPatches := []string{"machine:\n  env:\n    HTTP_PROXY: http://proxy.example.edu:3128\n    NO_PROXY: .example.edu,10.0.0.0/8,192.168.0.0/16\n"}
	return withPatches(text, "controlplane", clusterPatches, poolPatches)
}

// TestGenerate_LargestConfigFitsNovaUserData asserts the Nova limit on the
// largest expected case, in both contracts, and reports the headroom.
func TestGenerate_LargestConfigFitsNovaUserData(t *testing.T) {
	t.Parallel()
	for _, talos := range []string{talos113, talos114} {
		t.Run(talos, func(t *testing.T) {
			t.Parallel()
			in := openstackInput(t, largestOpenStack(30))
			c := mustGenerate(t, in, node(t, in.Cluster, "demo-controlplane-03", talos))
			size := c.UserDataSize()
			if size > machineconfig.NovaUserDataLimit {
				t.Fatalf("largest config is %d bytes base64, over Nova's %d", size, machineconfig.NovaUserDataLimit)
			}
			t.Logf("largest control plane (%s, 30 rules x 5 hosts, CCM, tailscale, encryption, 3 patches): %d bytes, %d base64 (%.0f%% of Nova's limit)",
				talos, len(c.Bytes()), size, 100*float64(size)/machineconfig.NovaUserDataLimit)
		})
	}
}

// TestGenerate_RefusesOversizedUserData shows the limit is enforced on
// OpenStack (a huge machine.files patch) and not on Proxmox (cidata ISO).
func TestGenerate_RefusesOversizedUserData(t *testing.T) {
	t.Parallel()
	huge := "machine:\n  files:\n    - path: /var/etc/big.txt\n      permissions: 0o644\n      op: create\n      content: " + strings.Repeat("x", 40000) + "\n"
	in := openstackInput(t, withPatches(openstackYAML, "", []string{huge}, nil))
	_, err := machineconfig.Generate(in, node(t, in.Cluster, "demo-controlplane-01", talos113))
	if err == nil || !strings.Contains(err.Error(), "over the provider's user-data limit of 65535 bytes") {
		t.Fatalf("Generate = %v, want the oversized config refused", err)
	}
	px := proxmoxInput(t, withPatches(bridgeYAML, "", []string{huge}, nil))
	if _, err := machineconfig.Generate(px, node(t, px.Cluster, "br-controlplane-01", talos113)); err != nil {
		t.Fatalf("Proxmox (no user-data limit): %v", err)
	}
}

// BenchmarkGenerate100Nodes generates every config of a 100-node OpenStack
// cluster (3 control planes, 97 workers) per iteration.
func BenchmarkGenerate100Nodes(b *testing.B) {
	text := strings.Replace(openstackYAML, "  gpu:\n    count: 2\n", "  gpu:\n    count: 97\n", 1)
	in := openstackInput(b, text)
	var nodes []machineconfig.Node
	for _, m := range in.Cluster.Hostnames() {
		nodes = append(nodes, node(b, in.Cluster, m.Hostname, talos114))
	}
	if len(nodes) != 100 {
		b.Fatalf("%d nodes, want 100", len(nodes))
	}
	var total int
	b.ReportAllocs()
	for b.Loop() {
		total = 0
		for _, n := range nodes {
			total += len(mustGenerate(b, in, n).Bytes())
		}
	}
	b.ReportMetric(float64(total), "config-bytes/op")
}
