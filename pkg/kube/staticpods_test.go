package kube_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
)

// checkStaticPods: StaticPods reads a component's mirror pods as Talos
// labels and annotates them: on a Ready node running (its host IP,
// Ready), on a NotReady one pending; another component's pod is not
// listed.
func checkStaticPods(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	cs := srv.Client()
	if err := srv.RegisterNode(t.Context(), kubeapi.Node{Name: "sp-1", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.62.3.1")}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterNode(t.Context(), kubeapi.Node{Name: "sp-2", Addresses: []netip.Addr{netip.MustParseAddr("127.62.3.2")}}); err != nil {
		t.Fatal(err)
	}
	mirrorPod := func(component, node, version string, containers ...corev1.Container) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: component + "-" + node, Namespace: metav1.NamespaceSystem,
				Labels: map[string]string{"k8s-app": component, "tier": "control-plane", "component": component},
			},
			Spec: corev1.PodSpec{NodeName: node, Containers: containers},
		}
		setOwner(p, mirror, node) // the mirror annotation and the Node as owner
		p.Annotations["talos.dev/config-version"] = version
		if _, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apiserver := corev1.Container{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.36.1"}
	sidecar := corev1.Container{Name: "sidecar", Image: "registry.k8s.io/pause:3.10"}
	mirrorPod("kube-apiserver", "sp-1", "7", sidecar, apiserver)
	mirrorPod("kube-apiserver", "sp-2", "3", apiserver)
	mirrorPod("kube-scheduler", "sp-1", "2", corev1.Container{Name: "kube-scheduler", Image: "registry.k8s.io/kube-scheduler:v1.36.1"})
	waitFor(t, "kube-apiserver-sp-1 Running", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, "kube-apiserver-sp-1", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})

	pods, err := k.StaticPods(t.Context(), "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	want := []kube.StaticPod{
		{Name: "kube-apiserver-sp-1", Node: "sp-1", HostIP: "127.62.3.1", Image: apiserver.Image, ConfigVersion: "7", Ready: true},
		{Name: "kube-apiserver-sp-2", Node: "sp-2", Image: apiserver.Image, ConfigVersion: "3"},
	}
	for _, w := range want {
		if !slices.Contains(pods, w) {
			t.Errorf("StaticPods(kube-apiserver) = %+v, lacks %+v", pods, w)
		}
	}
	if slices.ContainsFunc(pods, func(p kube.StaticPod) bool { return p.Name == "kube-scheduler-sp-1" }) {
		t.Errorf("StaticPods(kube-apiserver) lists another component's pod: %+v", pods)
	}
}
