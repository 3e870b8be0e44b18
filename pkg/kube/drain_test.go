package kube_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
)

// quick are drain options at test pace.
func quick(timeout time.Duration) kube.DrainOptions {
	return kube.DrainOptions{Timeout: timeout, EvictErrorRetryDelay: 50 * time.Millisecond, Poll: 20 * time.Millisecond}
}

// registerReady registers a Ready lab node (its pods run, their graceful
// deletions finish).
func registerReady(t *testing.T, srv *kubeapi.Server, name string) {
	t.Helper()
	if err := srv.RegisterNode(t.Context(), kubeapi.Node{Name: name, Ready: true}); err != nil {
		t.Fatal(err)
	}
}

// checkDrainEvicts: a drain cordons the node and evicts the pods of
// controllers (emptyDir ones too) and finished bare pods, and leaves a
// DaemonSet's pod and a mirror pod, also on another node untouched.
func checkDrainEvicts(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	cs, ns := srv.Client(), "drain-evicts"
	registerReady(t, srv, "drain-1")
	registerReady(t, srv, "drain-2")
	createNamespace(t, cs, ns)
	createDaemonSet(t, cs, ns)
	pods := createPods(t, cs, ns, "drain-1",
		podSpec{name: "web-1", owner: replicas}, podSpec{name: "cache-1", owner: replicas, emptyDir: true},
		podSpec{name: "agent-1", owner: daemonSet}, podSpec{name: "kube-apiserver-drain-1", owner: mirror},
		podSpec{name: "job-1", owner: bare})
	createPods(t, cs, ns, "drain-2", podSpec{name: "web-2", owner: replicas})
	finish(t, cs, pods["job-1"])

	var mu sync.Mutex
	var terminating bool
	o := quick(fixtureWait)
	o.Progress = func(p kube.DrainProgress) {
		mu.Lock()
		defer mu.Unlock()
		terminating = terminating || strings.Contains(p.String(), "drain-evicts/web-1 (terminating)")
	}
	if err := k.Drain(t.Context(), "drain-1", o); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !terminating {
		t.Error("the drain never reported web-1 terminating")
	}
	mu.Unlock()
	for name, want := range map[string]bool{"web-1": false, "cache-1": false, "job-1": false, "agent-1": true, "kube-apiserver-drain-1": true, "web-2": true} {
		if got := podExists(t, cs, ns, name); got != want {
			t.Errorf("after the drain, pod %s exists = %t, want %t", name, got, want)
		}
	}
	if n, found, err := k.NodeByName(t.Context(), "drain-1"); err != nil || !found || !n.Unschedulable {
		t.Errorf("drain-1 after the drain = %+v, %t, %v; want cordoned", n, found, err)
	}
	if n, _, _ := k.NodeByName(t.Context(), "drain-2"); n.Unschedulable {
		t.Error("the drain of drain-1 cordoned drain-2")
	}
}

// finish marks a pod Succeeded, as its kubelet would when it exits 0.
func finish(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	cur, err := cs.CoreV1().Pods(p.Namespace).Get(t.Context(), p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Phase = corev1.PodSucceeded
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkDrainBudget: a PodDisruptionBudget that allows no disruption holds
// the drain until its timeout, whose error names the pod and the budget;
// once it allows one, the drain run again finishes.
func checkDrainBudget(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	cs, ns := srv.Client(), "drain-budget"
	registerReady(t, srv, "budget-1")
	createNamespace(t, cs, ns)
	createPods(t, cs, ns, "budget-1", podSpec{name: "web-x", owner: replicas, labels: map[string]string{"app": "web"}},
		podSpec{name: "free-1", owner: replicas})
	createPDB(t, cs, ns, "web", 0)

	var mu sync.Mutex
	var seen []string
	// Long enough for free-1 to be evicted and gone on a loaded machine.
	o := quick(3 * time.Second)
	o.Progress = func(p kube.DrainProgress) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p.String())
	}
	err := k.Drain(t.Context(), "budget-1", o)
	want := "kube drain budget-1: timed out after 3s with 1 pod(s) still there: drain-budget/web-x (PodDisruptionBudget: The disruption budget web needs 1 healthy pods and has 1 currently)"
	if err == nil || err.Error() != want {
		t.Errorf("Drain under a budget allowing nothing = %v\nwant %s", err, want)
	}
	if !podExists(t, cs, ns, "web-x") || podExists(t, cs, ns, "free-1") {
		t.Error("after the blocked drain: want web-x still there and free-1 evicted")
	}
	mu.Lock()
	if wantLine := "waiting for 1 pod(s) on budget-1: drain-budget/web-x (PodDisruptionBudget)"; len(seen) == 0 || seen[len(seen)-1] != wantLine {
		t.Errorf("progress = %q, want it to end with %q", seen, wantLine)
	}
	mu.Unlock()

	setDisruptionsAllowed(t, cs, ns, "web", 1)
	if err := k.Drain(t.Context(), "budget-1", quick(fixtureWait)); err != nil {
		t.Fatalf("Drain once the budget allows one: %v", err)
	}
	if podExists(t, cs, ns, "web-x") {
		t.Error("web-x is still there after the drain succeeded")
	}
}

// checkDrainRefusesUnmanaged: a pod that declares no controller, or whose
// DaemonSet is gone, refuses the drain, naming them, before any eviction.
func checkDrainRefusesUnmanaged(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	cs, ns := srv.Client(), "drain-unmanaged"
	registerReady(t, srv, "bare-1")
	createNamespace(t, cs, ns)
	createPods(t, cs, ns, "bare-1", podSpec{name: "debug", owner: bare}, podSpec{name: "agent-x", owner: daemonSet},
		podSpec{name: "web-1", owner: replicas})

	err := k.Drain(t.Context(), "bare-1", quick(fixtureWait))
	want := "kube drain bare-1: cannot delete DaemonSet-managed Pods whose DaemonSet is gone: drain-unmanaged/agent-x; " +
		"cannot delete Pods that declare no controller (give them a controller or delete them, then re-run): drain-unmanaged/debug"
	if err == nil || err.Error() != want {
		t.Errorf("Drain with unmanaged pods = %v\nwant %s", err, want)
	}
	for _, name := range []string{"debug", "agent-x", "web-1"} {
		if !podExists(t, cs, ns, name) {
			t.Errorf("the refused drain deleted %s", name)
		}
	}
}

// checkNodeOps: uncordon undoes a cordon; uncordon and delete of a missing
// node are done; cordon and drain of one fail, naming it.
func checkNodeOps(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	registerReady(t, srv, "ops-1")
	ctx := t.Context()
	if err := k.Cordon(ctx, "ops-1"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := k.NodeByName(ctx, "ops-1"); err != nil || !n.Unschedulable {
		t.Errorf("after Cordon: %+v, %v", n, err)
	}
	for range 2 {
		if err := k.Uncordon(ctx, "ops-1"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, err := k.NodeByName(ctx, "ops-1"); err != nil || n.Unschedulable {
		t.Errorf("after Uncordon: %+v, %v", n, err)
	}
	for range 2 {
		if err := k.DeleteNode(ctx, "ops-1"); err != nil {
			t.Errorf("DeleteNode: %v", err)
		}
	}
	if n, found, err := k.NodeByName(ctx, "ops-1"); err != nil || found {
		t.Errorf("NodeByName after DeleteNode = %+v, %t, %v; want not found", n, found, err)
	}
	if err := k.Uncordon(ctx, "ops-1"); err != nil {
		t.Errorf("Uncordon of a deleted node = %v, want done", err)
	}
	if err := k.Cordon(ctx, "ops-1"); err == nil || !strings.HasPrefix(err.Error(), `kube cordon node ops-1: nodes "ops-1" not found`) {
		t.Errorf("Cordon of a deleted node = %v", err)
	}
	if err := k.Drain(ctx, "ops-1", quick(time.Second)); err == nil || !strings.Contains(err.Error(), "ops-1") {
		t.Errorf("Drain of a deleted node = %v", err)
	}
}
