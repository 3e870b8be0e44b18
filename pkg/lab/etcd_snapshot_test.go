package lab_test

import (
	"context"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode/talosnodetest"
)

// TestEtcdSnapshotHoldsTheClustersObjects: a lab cluster's control plane
// answers machinery's EtcdSnapshot with a snapshot of the etcd behind the
// cluster's kube-apiserver, so a ConfigMap created through the API is in
// it; a worker refuses, a stopped node is unreachable.
func TestEtcdSnapshotHoldsTheClustersObjects(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.124.0/24", 1, 1)
	b := c.build(l)
	createConfigMap(t, b.kube, "backed-up")
	var worker netip.Addr
	for _, m := range c.cfg.Hostnames() {
		if m.Role != config.RoleControlPlane {
			worker = b.addrs[m.Hostname]
		}
	}

	tc, nctx := c.talos(b.controlPlanes[0].String())
	path := filepath.Join(t.TempDir(), "db.snapshot")
	if err := saveSnapshot(nctx, tc, path); err != nil {
		t.Fatalf("EtcdSnapshot of the control plane: %v", err)
	}
	snap, err := talosnodetest.ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot: %+v", snap.Status)
	if snap.Status.Revision <= 0 || snap.Status.TotalKey <= 0 {
		t.Errorf("snapshot status %+v: want a revision and keys", snap.Status)
	}
	if key := "/registry/configmaps/default/backed-up"; !snap.Keys[key] {
		t.Errorf("the snapshot lacks %s, the ConfigMap created through the API", key)
	}

	wc, wctx := c.talos(worker.String())
	err = saveSnapshot(wctx, wc, filepath.Join(t.TempDir(), "worker.snapshot"))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("EtcdSnapshot of a worker: %v, want Unimplemented", err)
	}
	b.node(worker).PowerOff()
	sctx, cancel := context.WithTimeout(wctx, 10*time.Second)
	defer cancel()
	if err := saveSnapshot(sctx, wc, filepath.Join(t.TempDir(), "stopped.snapshot")); status.Code(err) != codes.Unavailable {
		t.Errorf("EtcdSnapshot of a stopped node: %v, want Unavailable", err)
	}
}

// saveSnapshot streams the node's etcd snapshot into path, as talosctl
// etcd snapshot does.
func saveSnapshot(ctx context.Context, c *client.Client, path string) error {
	rd, err := c.EtcdSnapshot(ctx, &machine.EtcdSnapshotRequest{})
	if err != nil {
		return err
	}
	defer rd.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rd); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
