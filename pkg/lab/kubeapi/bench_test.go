package kubeapi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkGET measures GET /api/v1/namespaces/default with client-go
// through the front door (TLS, identity headers, recorder) and straight at
// the apiserver.
func BenchmarkGET(b *testing.B) {
	needHelper(b)
	ca, caKey := testCA(b)
	srv, err := Start(b.Context(), Options{Address: apiVIP + ":0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: b.TempDir(), Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	certPEM, keyPEM, err := SignClientCert(ca, caKey, "admin", "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	for name, url := range map[string]string{"front door": srv.URL(), "direct": "https://" + srv.BackendAddress()} {
		cfg := certKubeconfig(b, url, ca, certPEM, keyPEM)
		cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
		cs := kubernetes.NewForConfigOrDie(cfg)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := cs.CoreV1().Namespaces().Get(b.Context(), "default", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
