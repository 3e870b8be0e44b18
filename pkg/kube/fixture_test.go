package kube_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// fixtureWait bounds every wait for the lab to catch up (a pod Running, a
// pod gone); it is a hang guard, not a timing assertion.
const fixtureWait = 30 * time.Second

// workload is what owns a fixture pod.
type workload int

const (
	bare      workload = iota // no controller
	replicas                  // a ReplicaSet (which need not exist: drain only looks up DaemonSets)
	daemonSet                 // the DaemonSet "agent" (see createDaemonSet)
	mirror                    // a static pod's mirror: the annotation and the Node as owner
)

// podSpec is a fixture pod on node.
type podSpec struct {
	name   string
	owner  workload
	labels map[string]string
	// emptyDir gives the pod an emptyDir volume.
	emptyDir bool
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// createDaemonSet creates the DaemonSet "agent" in ns (no controller runs
// it: it only has to exist).
func createDaemonSet(t *testing.T, cs kubernetes.Interface, ns string) *appsv1.DaemonSet {
	t.Helper()
	sel := map[string]string{"app": "agent"}
	ds, err := cs.AppsV1().DaemonSets(ns).Create(t.Context(), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podTemplate()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func podTemplate() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}
}

// createPods creates the pods on node in ns and waits until the lab's
// kubelet runs them all (an eviction of a pod not Running ignores every
// PodDisruptionBudget).
func createPods(t *testing.T, cs kubernetes.Interface, ns, node string, specs ...podSpec) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{}
	for _, s := range specs {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: s.labels}, Spec: podTemplate()}
		p.Spec.NodeName = node
		setOwner(p, s.owner, node)
		if s.emptyDir {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}
		created, err := cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[s.name] = created
	}
	for name := range out {
		waitFor(t, "pod "+ns+"/"+name+" Running", func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}
	return out
}

func setOwner(p *corev1.Pod, w workload, node string) {
	yes := true
	ref := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "0b1c2d3e-0000-4000-8000-000000000001", Controller: &yes}}
	}
	switch w {
	case replicas:
		p.OwnerReferences = ref("apps/v1", "ReplicaSet", "web-5d4f")
	case daemonSet:
		p.OwnerReferences = ref("apps/v1", "DaemonSet", "agent")
	case mirror:
		p.OwnerReferences = ref("v1", "Node", node)
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "a1b2c3"}
	case bare:
	}
}

// createPDB creates a PodDisruptionBudget over the pods labelled app=app
// and writes the status the disruption controller would (there is none in
// the lab): disruptionsAllowed as given.
func createPDB(t *testing.T, cs kubernetes.Interface, ns, app string, allowed int32) {
	t.Helper()
	one := intstr.FromInt32(1)
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setDisruptionsAllowed(t, cs, ns, pdb.Name, allowed)
}

// setDisruptionsAllowed writes the budget's status as of its current
// generation (an older observedGeneration makes every eviction 429).
func setDisruptionsAllowed(t *testing.T, cs kubernetes.Interface, ns, name string, allowed int32) {
	t.Helper()
	pdbs := cs.PolicyV1().PodDisruptionBudgets(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pdb, err := pdbs.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1 + allowed, DesiredHealthy: 1, ExpectedPods: 1 + allowed,
		}
		_, err = pdbs.UpdateStatus(t.Context(), pdb, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// podExists reports whether ns/name is still there (terminating or not).
func podExists(t *testing.T, cs kubernetes.Interface, ns, name string) bool {
	t.Helper()
	_, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, fixtureWait, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
