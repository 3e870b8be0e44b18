package talosnode_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// TestMeasure logs the start-up time of a 4-node cluster (fast timing: the
// 20 ms boot delay included) and Version calls per second over mTLS.
//
// It runs alone (not parallel) so the heap figure is the nodes'.
func TestMeasure(t *testing.T) {
	fx := newFixture(t, talos114)
	timing := fastTiming()
	timing.Boot = time.Millisecond
	l := newLab(t, fx, talosnode.Options{Timing: timing})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	l.boot()
	t.Logf("start-up: 4 nodes answering in %v", time.Since(start))
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("heap: %.1f MiB more with 4 nodes running (apid servers, TLS, COSI state; no client yet)", float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc))/(1<<20))
	c := l.client(cp(1))
	if _, err := c.Version(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	const calls = 500
	start = time.Now()
	for range calls {
		if _, err := c.Version(ctx(t, 2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	d := time.Since(start)
	t.Logf("Version: %d calls in %v, %.0f/s", calls, d, calls/d.Seconds())
}
