package kubeapi

import (
	"net/url"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkEtcdEndpoint: EtcdEndpoint is a plain-HTTP etcd on the API's VIP
// that holds what the apiserver stores (a ConfigMap created through the
// API is under its /registry key there).
func checkEtcdEndpoint(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	u, err := url.Parse(srv.EtcdEndpoint())
	if err != nil || u.Scheme != "http" || u.Hostname() != apiVIP || u.Port() == "" {
		t.Fatalf("EtcdEndpoint() = %q (%v), want http://%s:PORT", srv.EtcdEndpoint(), err, apiVIP)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "etcd-endpoint", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.EtcdEndpoint()}, Context: ctx, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/registry/configmaps/default/etcd-endpoint", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 1 {
		t.Fatalf("etcd at %s holds %d keys for the ConfigMap, want 1", srv.EtcdEndpoint(), resp.Count)
	}
}
