package kubeapi

import (
	"context"
	"fmt"

	"github.com/talosc/talosc/pkg/talos/identity"
)

// standaloneCATalos is the Talos version whose identity format the CA of
// a standalone API is generated in.
const standaloneCATalos = "v1.14"

// StartStandalone runs a kube-apiserver of a cluster that is not the lab's
// (another downstream cluster, a management cluster): a Kubernetes CA of
// its own, a free port on 127.0.0.1, its data in dataDir.
func StartStandalone(ctx context.Context, dataDir string, logf func(string, ...any)) (*Server, error) {
	id, err := identity.Generate(standaloneCATalos)
	if err != nil {
		return nil, fmt.Errorf("kubeapi: a CA: %w", err)
	}
	ca := id.Bundle().Certs.K8s
	return Start(ctx, Options{Address: "127.0.0.1:0", CACertPEM: ca.Crt, CAKeyPEM: ca.Key, DataDir: dataDir, Logf: logf})
}
