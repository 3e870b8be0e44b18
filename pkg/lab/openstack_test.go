package lab_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/lab"
)

// TestOpenStackServerBootsATalosNode follows one control plane through the
// lab as talosc will: a Nova server carrying a real machine config boots a
// Talos node on its port's fixed address, which answers machinery's client
// over mTLS, bootstraps, and brings up the real Kubernetes API on the VIP.
func TestOpenStackServerBootsATalosNode(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.77.0/24", 1, 0)
	m := c.cfg.Hostnames()[0]
	serverID, addr := c.boot(m)

	tc, nctx := c.talos(addr)
	eventually(t, "talos version over mTLS", 20*time.Second, func() error {
		v, err := tc.Version(nctx)
		if err == nil && v.Messages[0].Version.Tag != c.cfg.Talos.Version {
			return errors.New("version " + v.Messages[0].Version.Tag)
		}
		return err
	})
	bootstrap(t, tc, nctx)
	var kubeconfig []byte
	eventually(t, "kubeconfig", 10*time.Second, func() error {
		var err error
		kubeconfig, err = tc.Kubeconfig(nctx)
		return err
	})
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node registered in the real kube-apiserver", 3*time.Minute, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, m.Hostname, metav1.GetOptions{})
		if err == nil {
			if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
				return errors.New("not a control plane")
			}
		}
		return err
	})

	// Deleting the server stops the node.
	if err := servers.Delete(ctx, c.compute, serverID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node goes away with its server", 10*time.Second, func() error {
		vctx, cancel := context.WithTimeout(nctx, time.Second)
		defer cancel()
		if _, err := tc.Version(vctx); err == nil {
			return errors.New("the node still answers")
		}
		return nil
	})
}
