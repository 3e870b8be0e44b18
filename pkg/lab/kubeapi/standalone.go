package kubeapi

import "context"

// StartStandalone runs a kube-apiserver of a cluster that is not the lab's
// (another downstream cluster, a management cluster): a Kubernetes CA of
// its own, a free port on 127.0.0.1, its data in dataDir.
func StartStandalone(ctx context.Context, dataDir string, logf func(string, ...any)) (*Server, error) {
	caCert, caKey, err := NewCA()
	if err != nil {
		return nil, err
	}
	return Start(ctx, Options{Address: "127.0.0.1:0", CACertPEM: caCert, CAKeyPEM: caKey, DataDir: dataDir, Logf: logf})
}
