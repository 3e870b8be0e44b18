package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

// BenchmarkLoad measures what every talosc binary does first: load and
// validate cluster.yaml with its secrets.yaml. "scaffold" is the init
// scaffold; "large" has 40 worker pools, 40 security rules and patches.
func BenchmarkLoad(b *testing.B) {
	cluster, secrets := config.Scaffold("bench", config.ProviderOpenStack)
	secretsReal := strings.ReplaceAll(string(secrets), config.PlaceholderSecret, "bench-value")
	large := strings.Replace(string(cluster), "workers:\n", "workers:\n"+pools(40), 1)
	large = strings.Replace(large, "security:\n", "security:\n"+rules(40), 1)
	for _, tc := range []struct{ name, cluster string }{
		{"scaffold", string(cluster)},
		{"large", large},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := writeDir(b, map[string]string{config.ClusterFile: tc.cluster, config.SecretsFile: secretsReal})
			if _, err := config.Load(dir, config.LoadOptions{NeedCredentials: true}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := config.Load(dir, config.LoadOptions{NeedCredentials: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func pools(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  pool%02d:\n    count: 3\n    flavor: m1.large\n    disk: 100\n    tags: {team: t%d}\n    config_patches:\n      - |\n        machine:\n          sysctls:\n            vm.max_map_count: \"262144\"\n", i, i)
	}
	return b.String()
}

func rules(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  rule%02d:\n    port: %d\n    hosts: {office: 203.0.113.0/24, vpn: 100.64.0.0/10}\n", i, 9000+i)
	}
	return b.String()
}
