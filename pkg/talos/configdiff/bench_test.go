package configdiff_test

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/talos/configdiff"
)

// BenchmarkDiff diffs two 1.14 configs with different identities plus a
// 200 KiB inline manifest (the size of the vendored add-ons).
func BenchmarkDiff(b *testing.B) {
	oldCfg, _ := generated(b, "v1.14", "1")
	newCfg, _ := generated(b, "v1.14", "2")
	big := "cluster:\n  inlineManifests:\n    - name: big\n      contents: |\n" + strings.Repeat("        line: AbCdEf0123456789AbCdEf0123456789AbCdEf\n", 5000)
	oldCfg = append(oldCfg, []byte("---\n"+big)...)
	newCfg = append(newCfg, []byte("---\n"+big)...)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := configdiff.Diff(oldCfg, newCfg); err != nil {
			b.Fatal(err)
		}
	}
}
