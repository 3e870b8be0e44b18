package kube_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// checkCAMismatch: a kubeconfig whose CA is not the one that signed the
// API server's certificate (another cluster's, here) is refused by the
// client, with a clear error, although its client certificate is valid;
// the same kubeconfig with the right CA reads the server.
func checkCAMismatch(t *testing.T, srv *kubeapi.Server, caCrt, caKey []byte) {
	t.Helper()
	other, err := identity.Generate("v1.13.8")
	if err != nil {
		t.Fatal(err)
	}
	path := writeKubeconfig(t, srv.URL(), caCrt, caKey)
	wrong := writeKubeconfigCA(t, path, other.KubernetesCA())
	k, err := kube.Load(wrong, kube.Options{Timeout: 5 * time.Second, RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	before := count(srv, "/version")
	_, err = k.ServerVersion(t.Context())
	if err == nil {
		t.Fatal("ServerVersion accepted an API server certificate the kubeconfig's CA did not sign")
	}
	if !strings.Contains(err.Error(), "tls: failed to verify certificate: x509: certificate signed by unknown authority") {
		t.Errorf("error %q does not say the certificate is not trusted", err)
	}
	if n := count(srv, "/version") - before; n != 0 {
		t.Errorf("%d request(s) reached the API server through an untrusted connection", n)
	}
	right, err := kube.Load(path, kube.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := right.ServerVersion(t.Context()); err != nil {
		t.Errorf("with the right CA: %v", err)
	}
}

// writeKubeconfigCA rewrites the kubeconfig at path with caPEM as its
// cluster CA, into a new file.
func writeKubeconfigCA(t *testing.T, path string, caPEM []byte) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.CertificateAuthorityData = caPEM
	}
	out := filepath.Join(t.TempDir(), "kubeconfig-wrong-ca")
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		t.Fatal(err)
	}
	return out
}
