package kubeapi

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Bootstrap manifests as talosctl upgrade-k8s syncs them (server-side
// apply, field manager "talos", forced).
const (
	kubeProxyManifest = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system","labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy"}},"template":{"metadata":{"labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"hostNetwork":true,"priorityClassName":"system-node-critical","tolerations":[{"operator":"Exists"}],
"containers":[{"name":"kube-proxy","image":"registry.k8s.io/kube-proxy:v1.36.1","command":["/usr/local/bin/kube-proxy"]}]}}}}`
	corednsManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"coredns","namespace":"kube-system","labels":{"k8s-app":"kube-dns"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"k8s-app":"kube-dns"}},"template":{"metadata":{"labels":{"k8s-app":"kube-dns"}},
"spec":{"priorityClassName":"system-cluster-critical","containers":[{"name":"coredns","image":"registry.k8s.io/coredns/coredns:v1.12.4"}]}}}}`
)

// checkBootstrapManifests: the apiserver takes the kube-proxy DaemonSet and
// the CoreDNS Deployment by server-side apply, again with a new image; with
// no controller to give them pods, the health check skips kube-proxy (no
// desired count) and waits for CoreDNS's pods.
func checkBootstrapManifests(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	force := true
	opts := metav1.PatchOptions{FieldManager: "talos", Force: &force}
	apps := cs.AppsV1()
	for _, image := range []string{"v1.36.1", "v1.36.2"} {
		ds, err := apps.DaemonSets(metav1.NamespaceSystem).Patch(ctx, "kube-proxy", types.ApplyPatchType, []byte(strings.ReplaceAll(kubeProxyManifest, "v1.36.1", image)), opts)
		if err != nil {
			t.Fatalf("apply the kube-proxy DaemonSet: %v", err)
		}
		if got := ds.Spec.Template.Spec.Containers[0].Image; got != "registry.k8s.io/kube-proxy:"+image {
			t.Errorf("kube-proxy image %s after applying %s", got, image)
		}
	}
	if _, err := apps.Deployments(metav1.NamespaceSystem).Patch(ctx, "coredns", types.ApplyPatchType, []byte(corednsManifest), opts); err != nil {
		t.Fatalf("apply the CoreDNS Deployment: %v", err)
	}
	if err := srv.Check(ctx, "kube-proxy to report ready", nil, nil); !errors.Is(err, ErrSkip) {
		t.Errorf("kube-proxy without a desired count: %v, want SKIP", err)
	}
	want := `no pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"`
	if err := srv.Check(ctx, "coredns to report ready", nil, nil); err == nil || err.Error() != want {
		t.Errorf("CoreDNS without pods: %v, want %q", err, want)
	}
}
