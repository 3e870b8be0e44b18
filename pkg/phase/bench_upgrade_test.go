package phase_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/phase"
)

// BenchmarkTalosUpgrade measures the Talos upgrade of a built cluster on
// the lab's OpenStack (50 ms on every call, 5 s boots), from the lab's
// default Talos to its newest, with the workers one at a time (the
// default) and max_unavailable 10 at a time. Its lower bound comes from
// the work: every node's upgrade runs the lab's installer (Timing.Install)
// and then a reboot that keeps its API down for Timing.RebootDown, and
// the rollout goes through one batch after another (each control plane
// alone, then the workers' batches), so no upgrade can take less than
// that per-node time times the number of batches. The build is setup,
// outside the timing.
func BenchmarkTalosUpgrade(b *testing.B) {
	skipWithoutAPIServer(b)
	seq := 200 // clear of the other benchmarks' networks
	for _, size := range []benchSize{{"3cp+3w", 3, 3}, {"50nodes", 3, 47}} {
		for _, parallel := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/workers-%d-at-a-time", size.name, parallel), func(b *testing.B) {
				var upgrade time.Duration
				var calls callCounts
				ops := 0
				for b.Loop() {
					b.StopTimer()
					seq++
					c := startLabCluster(b, lab.ProviderOpenStack, seq, size)
					c.run(b, phase.ActionConverge)
					c.edit(b, "talos:\n  version: "+lab.DefaultTalosVersion+"\n", "talos:\n  version: "+lab.NewestTalosVersion+"\n")
					workers := fmt.Sprintf("    count: %d\n    flavor: talos.worker\n", size.workers)
					c.edit(b, workers, workers+fmt.Sprintf("    max_unavailable: %d\n", parallel))
					c.lab.Recorder().Reset()
					b.StartTimer()
					start := time.Now()
					c.run(b, phase.ActionConverge)
					upgrade += time.Since(start)
					b.StopTimer()
					calls.add(countCalls(c.lab.Recorder().Calls()))
					ops++
					c.close(b)
					b.StartTimer()
				}
				n := float64(ops)
				batches := size.controlPlanes + (size.workers+parallel-1)/parallel
				timing := talosnode.DefaultTiming() // the lab's, but for the boot
				bound := time.Duration(batches) * (timing.Install + timing.RebootDown)
				b.ReportMetric(upgrade.Seconds()/n, "upgrade-s/op")
				b.ReportMetric(bound.Seconds(), "bound-s")
				b.ReportMetric(upgrade.Seconds()/n/bound.Seconds(), "upgrade/bound")
				b.ReportMetric(float64(calls.talos)/n/float64(size.controlPlanes+size.workers), "talos-calls/node")
			})
		}
	}
}
