package kubeapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// drainPass is one pass of `kubectl drain --ignore-daemonsets` over node
// (k8s.io/kubectl/pkg/drain's filters): a pod of an existing DaemonSet is
// skipped, a pod without a controller refused, every other one evicted
// through policy/v1. It returns each pod's eviction error by name (nil:
// evicted) and the skipped pods.
func drainPass(t *testing.T, cs kubernetes.Interface, node string) (evicted map[string]error, skipped []string) {
	t.Helper()
	ctx := t.Context()
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	evicted = map[string]error{}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		switch {
		case p.DeletionTimestamp != nil:
			continue
		case ref == nil:
			t.Fatalf("pod %s declares no controller: a drain without --force refuses it", p.Name)
		case ref.Kind == "DaemonSet":
			if _, err := cs.AppsV1().DaemonSets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
				t.Fatalf("DaemonSet of %s: %v (a drain refuses the pod)", p.Name, err)
			}
			skipped = append(skipped, p.Name)
			continue
		}
		evicted[p.Name] = cs.CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
	}
	return evicted, skipped
}

// podsOn lists the names of the Running pods on node.
func podsOn(ctx context.Context, cs kubernetes.Interface, node string) ([]string, error) {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitPods waits until exactly want run on node.
func waitPods(t *testing.T, cs kubernetes.Interface, node string, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprint(node, " runs ", want), func(ctx context.Context) (bool, error) {
		got, err := podsOn(ctx, cs, node)
		if err == nil && !slices.Equal(got, want) {
			err = fmt.Errorf("running %v", got)
		}
		return err == nil, err
	})
}

// checkWorkload: every lab node runs the agent DaemonSet's pod, a node that
// takes ordinary pods an app pod too (a control plane's NoSchedule taint
// keeps it off); a drain evicts the app pod and skips the agent; placing
// the workload again on the cordoned node adds no app pod.
func checkWorkload(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	cp := Node{
		Name: "wl-cp", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.4.1")},
		Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
	}
	w := Node{Name: "wl-worker", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.4.2")}}
	for _, n := range []Node{cp, w} {
		if err := srv.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := srv.PlaceWorkload(ctx, n.Name); err != nil {
			t.Fatal(err)
		}
	}
	waitPods(t, cs, cp.Name, "lab-agent-wl-cp")
	waitPods(t, cs, w.Name, "lab-agent-wl-worker", "lab-app-wl-worker")

	if _, err := cs.CoreV1().Nodes().Patch(ctx, w.Name, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	evicted, skipped := drainPass(t, cs, w.Name)
	if len(evicted) != 1 || evicted["lab-app-wl-worker"] != nil || !slices.Equal(skipped, []string{"lab-agent-wl-worker"}) {
		t.Fatalf("drain: evicted %v, skipped %v", evicted, skipped)
	}
	eventually(t, "the evicted app pod gone", podGone(cs, WorkloadNamespace, "lab-app-wl-worker"))
	if err := srv.PlaceWorkload(ctx, w.Name); err != nil {
		t.Fatal(err)
	}
	if got, err := podsOn(ctx, cs, w.Name); err != nil || !slices.Equal(got, []string{"lab-agent-wl-worker"}) {
		t.Errorf("pods on the cordoned worker after placing again: %v %v", got, err)
	}
}

// checkDrainBlocked: while the drain of a node is blocked, the eviction of
// its guarded pod answers 429 every time; unblocked, it passes; blocked
// again, a new guarded pod is under a budget allowing nothing.
func checkDrainBlocked(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	const node = "blocked-1"
	if err := srv.RegisterNode(ctx, Node{Name: node, Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.5.1")}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetDrainBlocked(ctx, node, false); err != nil {
		t.Fatalf("unblocking a node never blocked: %v", err)
	}
	const guarded = "lab-guarded-blocked-1"
	for round := range 2 {
		for range 2 { // idempotent
			if err := srv.SetDrainBlocked(ctx, node, true); err != nil {
				t.Fatal(err)
			}
		}
		waitPods(t, cs, node, guarded)
		for range 3 {
			evicted, _ := drainPass(t, cs, node)
			if err := evicted[guarded]; !apierrors.IsTooManyRequests(err) {
				t.Fatalf("round %d: eviction under a blocking budget = %v, want 429", round, err)
			}
		}
		if err := srv.SetDrainBlocked(ctx, node, false); err != nil {
			t.Fatal(err)
		}
		if evicted, _ := drainPass(t, cs, node); evicted[guarded] != nil {
			t.Fatalf("round %d: eviction once unblocked = %v", round, evicted[guarded])
		}
		eventually(t, "the guarded pod gone", podGone(cs, WorkloadNamespace, guarded))
	}
}
