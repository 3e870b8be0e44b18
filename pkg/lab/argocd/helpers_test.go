package argocd

import (
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
)

// needHelper skips only a -short run without a prebuilt kube-apiserver
// helper.
func needHelper(tb testing.TB) {
	tb.Helper()
	if os.Getenv(kubeapi.EnvBinary) == "" && testing.Short() {
		tb.Skipf("-short and $%s unset: not building the kube-apiserver helper", kubeapi.EnvBinary)
	}
}

// startManagement starts a management cluster on a free loopback port and
// closes it when the test ends.
func startManagement(t *testing.T, inj *labnet.Injector) *Management {
	t.Helper()
	needHelper(t)
	m, err := Start(t.Context(), Options{
		Address:  "127.0.0.1:0",
		DataDir:  t.TempDir(),
		Injector: inj,
		Logf:     t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Logf("management cluster: start to CRDs Established and namespace %s: %v", Namespace, m.StartDuration())
	return m
}

// kubeconfigClient is a dynamic client from the kubeconfig the plugin
// would be given: it goes through the front door (recorded, faults).
func kubeconfigClient(t *testing.T, m *Management) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(m.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}
