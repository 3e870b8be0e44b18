package phase_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/phase"
)

// BenchmarkDay2 measures day 2 on the lab's OpenStack (50 ms on every
// call, 5 s boots), against the same cluster's build: the wall time of
// rolling a machine-configuration change (a node label on every pool, a
// live apply) out to every node, and of removing one worker (drain, reset,
// Node, server), each divided by the build's wall time; and the Talos
// calls per node each took. The build is setup, outside the timing.
func BenchmarkDay2(b *testing.B) {
	skipWithoutAPIServer(b)
	seq := 160 // clear of the other benchmarks' networks
	for _, size := range []benchSize{{"3cp+3w", 3, 3}, {"50nodes", 3, 47}} {
		b.Run(size.name, func(b *testing.B) {
			var build, rollout, removal time.Duration
			var rolloutCalls, removalCalls callCounts
			ops := 0
			for b.Loop() {
				b.StopTimer()
				seq++
				c := startLabCluster(b, lab.ProviderOpenStack, seq, size)
				start := time.Now()
				c.run(b, phase.ActionConverge)
				build += time.Since(start)

				c.edit(b, "include: [secrets.yaml]\n", "include: [secrets.yaml]\ntags: {bench: rolled}\n")
				c.lab.Recorder().Reset()
				b.StartTimer()
				start = time.Now()
				c.run(b, phase.ActionConverge)
				rollout += time.Since(start)
				b.StopTimer()
				rolloutCalls.add(countCalls(c.lab.Recorder().Calls()))

				c.edit(b, fmt.Sprintf("    count: %d\n    flavor: talos.worker\n", size.workers), fmt.Sprintf("    count: %d\n    flavor: talos.worker\n", size.workers-1))
				c.lab.Recorder().Reset()
				b.StartTimer()
				start = time.Now()
				c.run(b, phase.ActionConverge, "--yes")
				removal += time.Since(start)
				b.StopTimer()
				removalCalls.add(countCalls(c.lab.Recorder().Calls()))
				ops++
				c.close(b)
				b.StartTimer()
			}
			n := float64(ops)
			nodes := float64(size.controlPlanes + size.workers)
			b.ReportMetric(build.Seconds()/n, "build-s/op")
			b.ReportMetric(rollout.Seconds()/n, "rollout-s/op")
			b.ReportMetric(rollout.Seconds()/build.Seconds(), "rollout/build")
			b.ReportMetric(removal.Seconds()/n, "remove1-s/op")
			b.ReportMetric(removal.Seconds()/build.Seconds(), "remove1/build")
			b.ReportMetric(float64(rolloutCalls.talos)/n/nodes, "rollout-talos-calls/node")
			b.ReportMetric(float64(removalCalls.talos)/n, "remove1-talos-calls")
			b.ReportMetric(benchTimeScale, "time-scale")
		})
	}
}
