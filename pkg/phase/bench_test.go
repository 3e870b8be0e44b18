package phase_test

import (
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/phase"
)

// BenchmarkConverge converges a cluster from nothing on a fresh lab per
// iteration (50 ms on every API call, 5 s node boots), running tc-image,
// tc-net and tc-nodes in process. Besides the wall time it reports:
//
//   - bound-s/op, the converge's lower bound (convergeBound: the longest
//     chain of dependent operations the cluster needs, at the lab's latency
//     and timings), and x-bound, wall time over it: how far talosc is from
//     the best any client could do on this lab;
//   - lab-busy-s/op, the time the lab was busy answering talosc's calls or
//     doing its own work (labnet.Recorder.Busy), and x-lab-busy, wall time
//     over it: talosc's idle gaps only, blind to work it serialises;
//   - on the 50-node cluster, x-wall-of-6nodes: its wall time over the 3+3
//     cluster's (when both ran);
//   - the calls each service answered, and the time scale the phases ran
//     with (TALOSC_TIME_SCALE=benchTimeScale).
func BenchmarkConverge(b *testing.B) {
	benchConverge(b, lab.ProviderOpenStack, 0)
}

// BenchmarkConvergeProxmox is BenchmarkConverge on the lab's Proxmox VE
// (one node, bridge vmbr0, same latency and boot time; control planes of
// 2 GB and workers of 1 GB, so that 50 machines fit its one node).
func BenchmarkConvergeProxmox(b *testing.B) {
	benchConverge(b, lab.ProviderProxmox, 0)
}

func benchConverge(b *testing.B, provider string, seq int) {
	b.Helper()
	skipWithoutAPIServer(b)
	var sixNodesWall float64 // the 3+3 cluster's wall time per op, once it ran
	for _, size := range []benchSize{{"3cp+3w", 3, 3}, {"50nodes", 3, 47}} {
		b.Run(size.name, func(b *testing.B) {
			var wall, bound, busy time.Duration
			var calls callCounts
			ops := 0
			for b.Loop() {
				b.StopTimer()
				seq++
				c := startLabCluster(b, provider, seq, size)
				b.StartTimer()
				start := time.Now()
				c.run(b, phase.ActionConverge)
				took := time.Since(start)
				b.StopTimer()
				wall += took
				w := c.work(b)
				bound += convergeBound(provider, w)
				if testing.Verbose() {
					b.Logf("bound %s: %s", convergeBound(provider, w), describeChain(convergeChain(provider, w), w.latency))
				}
				busy += c.lab.Recorder().Busy()
				calls.add(countCalls(c.lab.Recorder().Calls()))
				ops++
				c.close(b)
				b.StartTimer()
			}
			perOp := wall.Seconds() / float64(ops)
			b.ReportMetric(perOp, "wall-s/op")
			b.ReportMetric(bound.Seconds()/float64(ops), "bound-s/op")
			b.ReportMetric(wall.Seconds()/bound.Seconds(), "x-bound")
			b.ReportMetric(busy.Seconds()/float64(ops), "lab-busy-s/op")
			b.ReportMetric(wall.Seconds()/busy.Seconds(), "x-lab-busy")
			if size.controlPlanes+size.workers == 6 {
				sixNodesWall = perOp
			} else if sixNodesWall > 0 {
				b.ReportMetric(perOp/sixNodesWall, "x-wall-of-6nodes")
			}
			b.ReportMetric(benchTimeScale, "time-scale")
			calls.report(b, provider, ops)
		})
	}
}

// BenchmarkNoopPlan plans a converged cluster of 3 (control planes only)
// and 50 machines: the calls a plan with nothing to do makes should not
// grow with the machines. The converge is setup, outside the timing.
func BenchmarkNoopPlan(b *testing.B) {
	benchNoopPlan(b, lab.ProviderOpenStack, 128) // clear of BenchmarkConverge's networks
}

// BenchmarkNoopPlanProxmox is BenchmarkNoopPlan on the lab's Proxmox VE.
func BenchmarkNoopPlanProxmox(b *testing.B) {
	benchNoopPlan(b, lab.ProviderProxmox, 128)
}

func benchNoopPlan(b *testing.B, provider string, seq int) {
	b.Helper()
	skipWithoutAPIServer(b)
	for _, size := range []benchSize{{"3", 3, 0}, {"50", 3, 47}} {
		b.Run(size.name, func(b *testing.B) {
			seq++
			c := startLabCluster(b, provider, seq, size)
			c.run(b, phase.ActionConverge)
			var calls callCounts
			ops := 0
			for b.Loop() {
				b.StopTimer()
				c.lab.Recorder().Reset()
				b.StartTimer()
				c.run(b, phase.ActionPlan)
				b.StopTimer()
				calls.add(countCalls(c.lab.Recorder().Calls()))
				ops++
				b.StartTimer()
			}
			b.ReportMetric(benchTimeScale, "time-scale")
			calls.report(b, provider, ops)
			c.close(b)
		})
	}
}
