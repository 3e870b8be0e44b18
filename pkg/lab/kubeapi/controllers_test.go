package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ctrlVIP is the API address of TestControllers, whose kube-system
// workloads put pods on every node: the other tests' nodes are on another
// apiserver.
const ctrlVIP = "127.40.0.3"

// Bootstrap manifests as pkg/lab/talosnode renders them and talosctl
// upgrade-k8s syncs them (server-side apply, field manager "talos",
// forced); the images are placeholders.
const (
	kubeProxyManifest = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system","labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy","tier":"node"}},"updateStrategy":{"type":"RollingUpdate"},"template":{"metadata":{"labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"hostNetwork":true,"priorityClassName":"system-cluster-critical","serviceAccountName":"kube-proxy",
"tolerations":[{"operator":"Exists","effect":"NoSchedule"},{"operator":"Exists","effect":"NoExecute"}],
"containers":[{"name":"kube-proxy","image":"registry.k8s.io/kube-proxy:@PROXY@","command":["/usr/local/bin/kube-proxy","--proxy-mode=iptables"],
"env":[{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]}]}}}}`
	corednsManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"coredns","namespace":"kube-system","labels":{"k8s-app":"kube-dns","kubernetes.io/name":"CoreDNS"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"k8s-app":"kube-dns"}},"template":{"metadata":{"labels":{"k8s-app":"kube-dns"}},
"spec":{"dnsPolicy":"Default","priorityClassName":"system-cluster-critical","serviceAccountName":"coredns",
"tolerations":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}],
"containers":[{"name":"coredns","image":"registry.k8s.io/coredns/coredns:@DNS@","args":["-conf","/etc/coredns/Corefile"],
"volumeMounts":[{"name":"config-volume","mountPath":"/etc/coredns","readOnly":true}]}],
"volumes":[{"name":"config-volume","configMap":{"name":"coredns","items":[{"key":"Corefile","path":"Corefile"}]}}]}}}}`
)

// TestControllers: the kube-proxy DaemonSet and the CoreDNS Deployment, as
// Talos's manifest sync applies them, get Running, Ready pods and the
// status Talos's health check and kubectl read; an image change replaces
// the pods; the pods follow the Nodes (a new node, a cordon and an
// eviction, a node not ready, a deleted Node); a DaemonSet elsewhere is
// left alone.
func TestControllers(t *testing.T) {
	t.Parallel()
	needHelper(t)
	ca, caKey := testCA(t)
	srv, err := Start(t.Context(), Options{
		Address: ctrlVIP + ":0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: t.TempDir(),
		PodTerminationDelay: 100 * time.Millisecond, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cs := t.Context(), srv.Client()
	register := func(name string, i byte, ready bool) {
		t.Helper()
		n := Node{Name: name, Ready: ready, Addresses: []netip.Addr{netip.AddrFrom4([4]byte{127, 40, 6, i})}}
		if strings.HasPrefix(name, "cp-") {
			n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
			n.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}
		if err := srv.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	register("cp-1", 1, true)
	register("w-1", 2, true)
	register("w-2", 3, true)
	nodes := []string{"cp-1", "w-1", "w-2"}

	for _, cond := range []string{"kube-proxy to report ready", "coredns to report ready"} {
		if err := srv.Check(ctx, cond, nil, nil); !errors.Is(err, ErrSkip) {
			t.Errorf("%s without its workload: %v, want SKIP", cond, err)
		}
	}
	createNamespace(t, cs, "elsewhere")
	tmpl := podTemplate(kindDaemonSet, "elsewhere")
	if _, err := cs.AppsV1().DaemonSets("elsewhere").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Selector: selector("elsewhere"), Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	applyBootstrap(t, cs, "v1.36.1", "v1.12.4")
	proxy := waitDaemonSet(t, srv, "v1.36.1", nodes)
	dns := waitDeployment(t, srv, "v1.12.4", nil)

	// an image change replaces every pod
	applyBootstrap(t, cs, "v1.36.2", "v1.12.5")
	for node, uid := range waitDaemonSet(t, srv, "v1.36.2", nodes) {
		if proxy[node] == uid {
			t.Errorf("the kube-proxy pod on %s was not replaced", node)
		}
	}
	dns2 := waitDeployment(t, srv, "v1.12.5", nil)
	for node, uid := range dns2 {
		if slices.Contains(slices.Collect(maps.Values(dns)), uid) {
			t.Errorf("the CoreDNS pod on %s was not replaced", node)
		}
	}

	// a new node gets its kube-proxy pod, Ready once the node is
	register("w-3", 4, false)
	nodes = append(nodes, "w-3")
	eventually(t, "kube-proxy desired on w-3", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		return err == nil && ds.Status.DesiredNumberScheduled == 4, err
	})
	// Talos counts a pod with no container statuses (Pending, its kubelet
	// not there yet) as completed, not as not ready
	if err := srv.Check(ctx, "kube-proxy to report ready", nil, nil); err == nil || err.Error() != "expected 4 ready pods, got 3" {
		t.Errorf("kube-proxy with a pod on a node not ready: %v, want 4 expected", err)
	}
	if name := podName(t, cs, "k8s-app=kube-proxy", "w-3"); !generated("kube-proxy").MatchString(name) {
		t.Errorf("kube-proxy pod %s on w-3", name)
	}
	if err := srv.SetReady(ctx, "w-3", true); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, srv, "v1.36.2", nodes)

	// a cordoned node keeps its kube-proxy pod; an evicted CoreDNS pod
	// comes back elsewhere
	cordoned := slices.Sorted(maps.Keys(dns2))[0]
	cordon(t, cs, cordoned, true)
	if err := cs.CoreV1().Pods(metav1.NamespaceSystem).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: podName(t, cs, "k8s-app=kube-dns", cordoned), Namespace: metav1.NamespaceSystem}}); err != nil {
		t.Fatal(err)
	}
	dns3 := waitDeployment(t, srv, "v1.12.5", []string{cordoned})
	waitDaemonSet(t, srv, "v1.36.2", nodes)
	cordon(t, cs, cordoned, false)

	// a deleted Node's pods go with it; its CoreDNS pod comes back elsewhere
	deleted := slices.Sorted(maps.Keys(dns3))[0]
	if err := cs.CoreV1().Nodes().Delete(ctx, deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, srv, "v1.36.2", slices.DeleteFunc(nodes, func(n string) bool { return n == deleted }))
	waitDeployment(t, srv, "v1.12.5", []string{deleted})
	eventually(t, "no pods on the deleted node", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + deleted})
		return err == nil && len(pods.Items) == 0, err
	})

	pods, err := cs.CoreV1().Pods("elsewhere").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("the DaemonSet outside kube-system got pods: %d (%v)", len(pods.Items), err)
	}

	// a kube-proxy DaemonSet that schedules no pod is present: Talos
	// waits for its pods (DaemonSetPresent), it does not skip it
	selectNone := []byte(`{"spec":{"template":{"spec":{"nodeSelector":{"talosc.dev/none":"x"}}}}}`)
	if _, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Patch(ctx, "kube-proxy", types.StrategicMergePatchType, selectNone, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kube-proxy desired on no node", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		return err == nil && ds.Status.ObservedGeneration == ds.Generation && ds.Status.DesiredNumberScheduled == 0, err
	})
	if err := srv.Check(ctx, "kube-proxy to report ready", nil, nil); err == nil || errors.Is(err, ErrSkip) {
		t.Errorf("kube-proxy present with no pod scheduled: %v, want a failure to wait on, not SKIP", err)
	}
}

// applyBootstrap server-side applies the kube-proxy DaemonSet and the
// CoreDNS Deployment at those image tags, as Talos's manifest sync does.
func applyBootstrap(t *testing.T, cs kubernetes.Interface, proxy, dns string) {
	t.Helper()
	force := true
	opts := metav1.PatchOptions{FieldManager: "talos", Force: &force}
	apps := cs.AppsV1()
	ds, err := apps.DaemonSets(metav1.NamespaceSystem).Patch(t.Context(), "kube-proxy", types.ApplyPatchType, []byte(strings.Replace(kubeProxyManifest, "@PROXY@", proxy, 1)), opts)
	if err != nil {
		t.Fatalf("apply the kube-proxy DaemonSet: %v", err)
	}
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != "registry.k8s.io/kube-proxy:"+proxy {
		t.Errorf("kube-proxy image %s after applying %s", got, proxy)
	}
	if _, err := apps.Deployments(metav1.NamespaceSystem).Patch(t.Context(), "coredns", types.ApplyPatchType, []byte(strings.Replace(corednsManifest, "@DNS@", dns, 1)), opts); err != nil {
		t.Fatalf("apply the CoreDNS Deployment: %v", err)
	}
}

// podName is the name of the kube-system pod of selector on node (pods
// being deleted left out).
func podName(t *testing.T, cs kubernetes.Interface, selector, node string) string {
	t.Helper()
	list, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if len(list.Items) != 1 {
		t.Fatalf("%d pods of %s on %s", len(list.Items), selector, node)
	}
	return list.Items[0].Name
}

// cordon cordons node or uncordons it.
func cordon(t *testing.T, cs kubernetes.Interface, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := cs.CoreV1().Nodes().Patch(t.Context(), node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
