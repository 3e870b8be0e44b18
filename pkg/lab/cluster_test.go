package lab_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/lab/vip"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// TestClusterAPIGoesWithItsLastControlPlane: a cluster's API outlives its
// control planes powered off (the same apiserver answers with its data when
// they come back) and all but one of them deleted (their Nodes stay, not
// Ready); once the last one is deleted, or reset, the apiserver stops, its
// VIP is forgotten and its data removed, and a new cluster of the same name
// bootstraps a fresh API on the same VIP: it answers with the new cluster's
// CA and lists only the new nodes.
func TestClusterAPIGoesWithItsLastControlPlane(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	for _, tc := range []struct{ last, cidr string }{
		{"deleted", "127.16.80.0/24"},
		{"reset", "127.16.81.0/24"},
	} {
		t.Run("last control plane "+tc.last, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, VIPFailover: 100 * time.Millisecond, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			c := newOSCluster(t, l, tc.cidr, 2, 1)
			name := c.cfg.Name
			first := c.build(l)
			api := l.KubeAPI(name)
			marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first-build", Namespace: "default"}}
			if _, err := first.kube.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			hasMarker := func(cs kubernetes.Interface) error {
				_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, marker.Name, metav1.GetOptions{})
				return err
			}

			cps := first.controlPlanes
			for _, a := range cps {
				first.node(a).PowerOff()
			}
			eventually(t, "the API refuses with every control plane off", 10*time.Second, func() error {
				if err := hasMarker(first.kube); !errors.Is(err, syscall.ECONNREFUSED) {
					return fmt.Errorf("API call: %w, want connection refused", err)
				}
				return nil
			})
			for _, a := range cps {
				first.node(a).PowerOn()
			}
			eventually(t, "the API is back with its data", 20*time.Second, func() error { return hasMarker(first.kube) })
			if got := l.KubeAPI(name); got != api {
				t.Fatal("powering the control planes off and on replaced the cluster's API")
			}

			last := cps[len(cps)-1]
			for host, a := range first.addrs {
				if a != last {
					first.destroy(host)
				}
			}
			eventually(t, "the API answers with one control plane left", 10*time.Second, func() error { return hasMarker(first.kube) })
			eventually(t, "the deleted servers' Nodes stay, not Ready", 10*time.Second, func() error {
				list, err := first.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				got := map[string]bool{}
				for _, n := range list.Items {
					got[n.Name] = ready(n)
				}
				for host, a := range first.addrs {
					if r, ok := got[host]; !ok || r != (a == last) {
						return fmt.Errorf("Nodes (name: Ready) %v; want all of %v, only %s Ready", got, first.addrs, first.host(last))
					}
				}
				return nil
			})
			if l.KubeAPI(name) != api {
				t.Fatal("deleting all but one control plane replaced the cluster's API")
			}
			switch tc.last {
			case "deleted":
				first.destroy(first.host(last))
			case "reset":
				tcl, nctx := c.talos(last.String())
				if err := tcl.Reset(nctx, false, false); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the API stops and its data goes", 30*time.Second, func() error {
				select {
				case <-api.Exited():
				default:
					return errors.New("the apiserver still runs")
				}
				if _, err := os.Stat(filepath.Dir(api.LogPath())); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("its data directory: %w", err)
				}
				if l.KubeAPI(name) != nil || slices.ContainsFunc(l.Status().VIPs, func(v vip.Status) bool { return v.Cluster == name }) ||
					slices.ContainsFunc(l.Services(), func(e lab.Endpoint) bool { return e.Name == "kubernetes/"+name }) {
					return fmt.Errorf("the lab still knows it: %+v", l.Status())
				}
				return nil
			})
			if tc.last == "reset" {
				first.destroy(first.host(last))
			}

			if c.id, err = identity.Generate(c.cfg.Talos.Version); err != nil {
				t.Fatal(err)
			}
			c.cfg = loadCluster(t, tc.cidr, 1, 1)
			second := c.build(l)
			if got := l.KubeAPI(name); got == nil || got == api || got.Address() != api.Address() {
				t.Fatalf("the new cluster's API %v is not a new one on the VIP %s", got, api.Address())
			}
			var unknownCA *tls.CertificateVerificationError
			if err := hasMarker(first.kube); !errors.As(err, &unknownCA) {
				t.Fatalf("the old cluster's CA reached the new API: %v", err)
			}
			if err := hasMarker(second.kube); !apierrors.IsNotFound(err) {
				t.Fatalf("the new API has the old one's data: %v", err)
			}
		})
	}
}

// build is one build of a cluster on the lab's OpenStack: its servers and
// their addresses by hostname, its control planes' addresses, and a
// clientset for its API.
type build struct {
	c             *osCluster
	l             *lab.Lab
	servers       map[string]string
	addrs         map[string]netip.Addr
	controlPlanes []netip.Addr
	kube          kubernetes.Interface
}

// build boots every machine of c.cfg, bootstraps the first control plane
// and waits until the API lists exactly these nodes, Ready.
func (c *osCluster) build(l *lab.Lab) *build {
	c.tb.Helper()
	b := &build{c: c, l: l, servers: map[string]string{}, addrs: map[string]netip.Addr{}}
	for _, m := range c.cfg.Hostnames() {
		id, addr := c.boot(m)
		b.servers[m.Hostname], b.addrs[m.Hostname] = id, netip.MustParseAddr(addr)
		if m.Role == config.RoleControlPlane {
			b.controlPlanes = append(b.controlPlanes, b.addrs[m.Hostname])
		}
	}
	tc, nctx := c.talos(b.controlPlanes[0].String())
	bootstrap(c.tb, tc, nctx)
	b.kube = kubeClient(c.tb, tc, nctx)
	eventually(c.tb, "the API lists the nodes Ready", 3*time.Minute, b.nodesListed)
	return b
}

// host is the hostname of the machine at addr.
func (b *build) host(addr netip.Addr) string {
	for h, a := range b.addrs {
		if a == addr {
			return h
		}
	}
	return ""
}

// nodesListed checks that the API's Node objects are exactly the build's
// machines, on their addresses and Ready.
func (b *build) nodesListed() error {
	list, err := b.kube.CoreV1().Nodes().List(b.c.tb.Context(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	got := map[string]netip.Addr{}
	for _, n := range list.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && ready(n) {
				got[n.Name], _ = netip.ParseAddr(a.Address)
			}
		}
	}
	if !maps.Equal(got, b.addrs) {
		return fmt.Errorf("Ready nodes %v, want %v", got, b.addrs)
	}
	return nil
}

// ready reports whether n's Ready condition is true.
func ready(n corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// destroy deletes the server of host and waits until its Talos node is
// gone from the lab.
func (b *build) destroy(host string) {
	tb := b.c.tb
	tb.Helper()
	if err := servers.Delete(tb.Context(), b.c.compute, b.servers[host]).ExtractErr(); err != nil {
		tb.Fatal(err)
	}
	eventually(tb, "the node of the deleted server goes", 10*time.Second, func() error {
		if _, ok := b.l.Fleet().Node(b.addrs[host]); ok {
			return fmt.Errorf("%s still runs", host)
		}
		return nil
	})
}

// node is the Talos node at addr.
func (b *build) node(addr netip.Addr) *talosnode.Node {
	b.c.tb.Helper()
	n, ok := b.l.Fleet().Node(addr)
	if !ok {
		b.c.tb.Fatalf("no Talos node at %s", addr)
	}
	return n
}
