package lab_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/talosc/talosc/pkg/lab"
)

// BenchmarkLabSixNodes builds a 3 control plane + 3 worker cluster on the
// lab's OpenStack (servers with real machine configs, Talos nodes over mTLS,
// bootstrap, the real kube-apiserver with six Ready nodes) and reports the
// wall time to six Ready nodes, the lab's Go heap and the apiserver's RSS.
func BenchmarkLabSixNodes(b *testing.B) {
	if os.Getenv("TALOSC_KUBE_APISERVER") == "" {
		b.Skip("needs TALOSC_KUBE_APISERVER (make kube-apiserver)")
	}
	for i := range b.N {
		start := time.Now()
		l, err := lab.Start(b.Context(), lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		c := newOSCluster(b, l, fmt.Sprintf("127.16.%d.0/24", 100+i%100), 3, 3)
		var first string
		for _, m := range c.cfg.Hostnames() {
			_, addr := c.boot(m)
			if first == "" {
				first = addr
			}
		}
		tc, nctx := c.talos(first)
		bootstrap(b, tc, nctx)
		eventually(b, "six Ready nodes", 3*time.Minute, func() error {
			api := l.KubeAPI(c.cfg.Name)
			if api == nil {
				return fmt.Errorf("no kube-apiserver yet")
			}
			nodes, err := api.Client().CoreV1().Nodes().List(b.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(nodes.Items) != 6 {
				return fmt.Errorf("%d nodes", len(nodes.Items))
			}
			return nil
		})
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-6-ready")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "lab-heap-MB")
		b.ReportMetric(rssMB(l.KubeAPI(c.cfg.Name).PID()), "apiserver-rss-MB")
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// rssMB reads a process's resident set size from /proc (0 when unknown).
func rssMB(pid int) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
