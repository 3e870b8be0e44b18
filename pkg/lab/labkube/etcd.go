package labkube

import "github.com/talosc/talosc/pkg/lab/talosnode"

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
