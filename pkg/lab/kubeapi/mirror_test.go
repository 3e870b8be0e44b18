package kubeapi

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// mirrorPods returns the mirror pods on node by name.
func mirrorPods(ctx context.Context, cs kubernetes.Interface, node string) (map[string]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
			out[p.Name] = p
		}
	}
	return out, nil
}

// checkMirrorPods: a control plane's mirror pods appear as its kubelet
// makes them and run Ready on its address; a changed static pod's mirror
// pod is replaced, the others stay; pods that are not mirror pods are
// left alone; no static pods, no mirror pods.
func checkMirrorPods(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	const node = "mirror-cp"
	addr := netip.MustParseAddr("127.40.4.1")
	static := []StaticPod{
		{Component: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.35.4", ConfigVersion: "3"},
		{Component: "kube-controller-manager", Image: "registry.k8s.io/kube-controller-manager:v1.35.4", ConfigVersion: "2"},
		{Component: "kube-scheduler", Image: "registry.k8s.io/kube-scheduler:v1.35.4", ConfigVersion: "2"},
	}
	if err := srv.SyncMirrorPods(ctx, node, static); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror pods of a node not registered: %v, want NotFound", err)
	}
	if err := srv.RegisterNode(ctx, Node{Name: node, Ready: true, Addresses: []netip.Addr{addr}}); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "not-a-mirror-" + node, Namespace: metav1.NamespaceSystem},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SyncMirrorPods(ctx, node, static); err != nil {
		t.Fatal(err)
	}
	uids := waitMirrorPods(t, cs, node, addr, static)

	p, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, "kube-apiserver-"+node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"k8s-app": "kube-apiserver", "component": "kube-apiserver", "tier": "control-plane", "app.kubernetes.io/version": "1.35.4"} {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (all: %v)", k, p.Labels[k], v, p.Labels)
		}
	}
	if p.Annotations[corev1.MirrorPodAnnotationKey] != p.Annotations["kubernetes.io/config.hash"] || p.Annotations["kubernetes.io/config.source"] != "file" {
		t.Errorf("kubelet annotations: %v", p.Annotations)
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "Node" || ref.APIVersion != "v1" || ref.Name != node || ref.UID != n.UID {
		t.Errorf("controller of the mirror pod: %+v, want Node %s (%s)", ref, node, n.UID)
	}
	if c := p.Spec.Containers; len(c) != 1 || c[0].Name != "kube-apiserver" || !p.Spec.HostNetwork {
		t.Errorf("mirror pod spec: %+v", p.Spec)
	}

	// the apiserver's image and config change: its mirror pod is replaced
	static[0].Image, static[0].ConfigVersion = "registry.k8s.io/kube-apiserver:v1.36.1", "4"
	if err := srv.SyncMirrorPods(ctx, node, static); err != nil {
		t.Fatal(err)
	}
	again := waitMirrorPods(t, cs, node, addr, static)
	for name, uid := range uids {
		if replaced := again[name] != uid; replaced != (name == "kube-apiserver-"+node) {
			t.Errorf("%s replaced: %t", name, replaced)
		}
	}

	if err := srv.SyncMirrorPods(ctx, node, nil); err != nil {
		t.Fatal(err)
	}
	if left, err := mirrorPods(ctx, cs, node); err != nil || len(left) > 0 {
		t.Errorf("mirror pods without static pods: %v, %v", left, err)
	}
	if _, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, other.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("a pod that is not a mirror pod: %v", err)
	}
}

// waitMirrorPods waits until node's mirror pods are exactly those of
// static, each Running and Ready on addr with its image and config
// version, and returns their UIDs by name.
func waitMirrorPods(t *testing.T, cs kubernetes.Interface, node string, addr netip.Addr, static []StaticPod) map[string]types.UID {
	t.Helper()
	var uids map[string]types.UID
	eventually(t, "mirror pods of "+node, func(ctx context.Context) (bool, error) {
		pods, err := mirrorPods(ctx, cs, node)
		if err != nil {
			return false, err
		}
		got, want := map[string]string{}, map[string]string{}
		uids = map[string]types.UID{}
		for name, p := range pods {
			got[name] = fmt.Sprintf("%s %s %s %s ready=%s", p.Spec.Containers[0].Image, p.Annotations["talos.dev/config-version"],
				p.Status.Phase, p.Status.HostIP, podReadiness(&p))
			uids[name] = p.UID
		}
		for _, s := range static {
			want[s.Component+"-"+node] = fmt.Sprintf("%s %s Running %s ready=True", s.Image, s.ConfigVersion, addr)
		}
		if d := cmp.Diff(want, got); d != "" {
			return false, fmt.Errorf("(-want +got):\n%s", d)
		}
		return true, nil
	})
	return uids
}
