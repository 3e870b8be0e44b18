package lab_test

import (
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
)

// TestClusterDirNamesTheLabsFactory: the cluster directory the lab writes
// names its own Image Factory and kubelet registry in cluster.yaml, so a
// lab user exports nothing (and a real cluster.yaml never inherits the
// lab's from a shell). The Proxmox directory is checked by newPXCluster.
func TestClusterDirNamesTheLabsFactory(t *testing.T) {
	t.Parallel()
	l, err := lab.Start(t.Context(), lab.Options{Provider: lab.ProviderOpenStack, ClusterCIDR: "127.16.78.0/24", ExternalCIDR: "127.204.78.0/24", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	dir := t.TempDir()
	if _, err := l.WriteClusterDir(dir, "oslab"); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.LoadOptions{NeedCredentials: true})
	if err != nil {
		t.Fatalf("the lab's cluster directory does not load: %v", err)
	}
	checkLabSources(t, l, cfg)
}

// checkLabSources fails unless cfg reads releases from l's Image Factory.
func checkLabSources(tb testing.TB, l *lab.Lab, cfg *config.Cluster) {
	tb.Helper()
	if got, want := cfg.ImageFactoryURL(), l.Factory.URL; got != want {
		tb.Errorf("talos.image_factory: %q, want the lab's %q", got, want)
	}
	if got, want := cfg.KubeletRepositoryURL(), l.Factory.KubeletRepositoryURL(); got != want {
		tb.Errorf("kubernetes.kubelet_repository: %q, want the lab's %q", got, want)
	}
}
