package labkube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// EtcdEndpoint is the client URL of cluster c's real etcd, the one its
// kube-apiserver stores in, which its control planes' EtcdSnapshot streams
// (the fleet's Options.EtcdEndpoint); "" while the cluster has no API.
func (k *Kubernetes) EtcdEndpoint(c *talosnode.Cluster) string {
	srv := k.Server(c.Name())
	if srv == nil {
		return ""
	}
	return srv.EtcdEndpoint()
}

// EtcdLost loses the data of cluster c's real etcd (the fleet's
// Options.EtcdLost: the last control plane holding etcd data was wiped):
// its apiserver stops and its etcd data is moved away, so its API serves
// nothing until a bootstrap or a recovery (EtcdRestore) starts it again.
func (k *Kubernetes) EtcdLost(c *talosnode.Cluster) {
	srv := k.Server(c.Name())
	if srv == nil {
		return
	}
	k.opts.Logf("kubernetes for %s: every control plane's etcd data is gone; so is its etcd", c.Name())
	if err := srv.LoseEtcd(); err != nil {
		k.opts.Logf("kubernetes for %s: lose etcd: %v", c.Name(), err)
	}
}

// EtcdRestore replaces the data of the real etcd of the cluster info
// names with what fill writes (nil: an empty etcd) and restarts its
// apiserver on it (the fleet's Options.EtcdRestore); a cluster without an
// API gets one, started on that data.
func (k *Kubernetes) EtcdRestore(info talosnode.BootstrapInfo, fill func(dir string) error) error {
	ctx, cancel := context.WithTimeout(k.ctx, 30*time.Minute) // the binary may be built first
	defer cancel()
	if srv := k.Server(info.ClusterName); srv != nil {
		start := time.Now()
		if err := srv.RestartOnEtcd(ctx, fill); err != nil {
			return err
		}
		k.opts.Recorder.Work("kubernetes", "restart "+info.ClusterName, start, time.Since(start))
		return nil
	}
	k.waitStopped(info.ClusterName)
	dir := filepath.Join(k.dataDir(info.ClusterName), "etcd")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if fill != nil {
		if err := fill(dir); err != nil {
			return err
		}
	}
	k.OnBootstrap(info)
	if k.Server(info.ClusterName) == nil {
		return errors.New("kubernetes for " + info.ClusterName + ": the API did not start (see the lab's log)")
	}
	return nil
}
