// Package kubeapitest starts the lab's real kube-apiserver for a test.
package kubeapitest

import (
	"os"
	"testing"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
)

// Standalone starts a kube-apiserver with a CA of its own on a free
// loopback port (kubeapi.StartStandalone), closed when the test ends. A
// -short run without a prebuilt binary ($TALOSC_KUBE_APISERVER) skips
// rather than build one.
func Standalone(t *testing.T) *kubeapi.Server {
	t.Helper()
	if os.Getenv(kubeapi.EnvBinary) == "" && testing.Short() {
		t.Skipf("-short and $%s unset: not building the kube-apiserver helper", kubeapi.EnvBinary)
	}
	srv, err := kubeapi.StartStandalone(t.Context(), t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}
