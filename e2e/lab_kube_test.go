package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// clientset is a client of DIR's kubeconfig and a context for one check.
func clientset(ts *testscript.TestScript, dir string) (kubernetes.Interface, context.Context, context.CancelFunc) {
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(ts.MkAbs(dir), "kubeconfig"))
	ts.Check(err)
	cs, err := kubernetes.NewForConfig(rc)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	return cs, ctx, cancel
}

// kubeVersion checks "lab kube-version DIR WANT": the API of DIR's
// kubeconfig reports gitVersion WANT on /version.
func kubeVersion(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab kube-version DIR WANT")
	}
	cs, _, cancel := clientset(ts, args[0])
	defer cancel()
	v, err := cs.Discovery().ServerVersion()
	ts.Check(err)
	if v.GitVersion != args[1] {
		ts.Fatalf("/version reports %s, want %s", v.GitVersion, args[1])
	}
}

// kubeletVersions checks "lab kubelet-versions DIR WANT": every Node of
// DIR's kubeconfig reports kubelet WANT.
func kubeletVersions(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab kubelet-versions DIR WANT")
	}
	cs, ctx, cancel := clientset(ts, args[0])
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	ts.Check(err)
	if len(nodes.Items) == 0 {
		ts.Fatalf("no Kubernetes nodes")
	}
	for _, n := range nodes.Items {
		if got := n.Status.NodeInfo.KubeletVersion; got != args[1] {
			ts.Fatalf("node %s runs kubelet %s, want %s", n.Name, got, args[1])
		}
	}
}

// mirrorPods checks "lab mirror-pods DIR COMPONENT WANT-TAG": every
// control plane Node of DIR's kubeconfig has a Ready mirror pod of
// COMPONENT (kube-system/COMPONENT-NODE) running image tag WANT-TAG.
func mirrorPods(ts *testscript.TestScript, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: lab mirror-pods DIR COMPONENT WANT-TAG")
	}
	component, tag := args[1], args[2]
	cs, ctx, cancel := clientset(ts, args[0])
	defer cancel()
	cps, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/control-plane"})
	ts.Check(err)
	if len(cps.Items) == 0 {
		ts.Fatalf("no control plane nodes")
	}
	for _, n := range cps.Items {
		p, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, component+"-"+n.Name, metav1.GetOptions{})
		ts.Check(err)
		_, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]
		ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
		image := p.Spec.Containers[0].Image
		if !mirror || !ready || p.Spec.NodeName != n.Name || !strings.HasSuffix(image, ":"+tag) {
			ts.Fatalf("%s on %s: image %s, mirror pod %t, Ready %t; want a Ready mirror pod running tag %s", p.Name, n.Name, image, mirror, ready, tag)
		}
	}
}
