package phase_test

import (
	"encoding/json"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/talosc/talosc/pkg/cmd/tcnodes"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
)

// BenchmarkBackup measures `tc-nodes backup` on the lab's OpenStack (50 ms
// on every call) after a build of 3 control planes and 3 workers: the wall
// time of streaming, verifying, sealing, storing and reading back one
// bundle of the lab's real etcd, and the bundle's size against the
// snapshot's. The build is setup, outside the timing.
func BenchmarkBackup(b *testing.B) {
	skipWithoutAPIServer(b)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	seq := 190 // clear of the other benchmarks' networks
	var took time.Duration
	var bundle, snapshot int64
	ops := 0
	for b.Loop() {
		b.StopTimer()
		seq++
		c := startLabCluster(b, lab.ProviderOpenStack, seq, benchSize{"3cp+3w", 3, 3})
		c.run(b, phase.ActionConverge)
		c.edit(b, "include: [secrets.yaml]\n", "include: [secrets.yaml]\nbackup:\n  recipients: ["+id.Recipient().String()+"]\n")
		b.StartTimer()
		start := time.Now()
		out := c.runPhase(b, builtinPhase{tcnodes.NewCommand, nodes.Phase{}}, nil, []string{phase.ActionBackup, "--quiet"})
		took += time.Since(start)
		b.StopTimer()
		var doc state.Document
		if err := json.Unmarshal(out, &doc); err != nil {
			b.Fatal(err)
		}
		var got sections.Backup
		if sec, ok, err := doc.Section(phase.Nodes); err != nil || !ok || json.Unmarshal(sec.Outputs, &got) != nil {
			b.Fatalf("no backup in the nodes section: %v", err)
		}
		bundle += got.Record.BundleSize
		snapshot += got.Record.Meta.SnapshotSize
		ops++
		c.close(b)
		b.StartTimer()
	}
	n := float64(ops)
	b.ReportMetric(took.Seconds()/n, "backup-s/op")
	b.ReportMetric(float64(bundle)/n, "bundle-bytes")
	b.ReportMetric(float64(snapshot)/n, "snapshot-bytes")
	b.ReportMetric(float64(bundle)/float64(snapshot), "bundle/snapshot")
}
