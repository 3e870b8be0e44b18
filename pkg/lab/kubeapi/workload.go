package kubeapi

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// The workload the lab runs on its nodes, in WorkloadNamespace: without a
// controller-manager nothing creates pods for these owners, so the lab
// places them itself (PlaceWorkload, SetDrainBlocked), one pod of each per
// node, named <owner>-<node>.
const (
	// WorkloadNamespace holds the lab's workload.
	WorkloadNamespace = "lab-workload"
	// AgentDaemonSet runs a pod on every lab node; a drain skips it
	// (kubectl drain --ignore-daemonsets; the DaemonSet exists, as drain
	// checks).
	AgentDaemonSet = "lab-agent"
	// AppReplicaSet runs an ordinary evictable pod on every lab node that
	// takes ordinary pods, so a drain has work.
	AppReplicaSet = "lab-app"
	// GuardedReplicaSet runs the pod of a DrainBlocked node, under the
	// PodDisruptionBudget <GuardedReplicaSet>-<node>.
	GuardedReplicaSet = "lab-guarded"
)

// nodeLabel labels a workload pod with its node, for a per-node budget.
const nodeLabel = "lab.talosc.dev/node"

// PlaceWorkload gives the lab node what the controllers of a cluster would:
// the AgentDaemonSet pod, and, when the node takes ordinary pods (not
// cordoned, no NoSchedule or NoExecute taint), an AppReplicaSet pod. Pods
// already there stay.
func (s *Server) PlaceWorkload(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	n, err := s.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kubeapi: workload of %s: %w", node, err)
	}
	if err := s.ensurePod(ctx, kindDaemonSet, AgentDaemonSet, node); err != nil {
		return err
	}
	if !takesPods(n) {
		return nil
	}
	return s.ensurePod(ctx, kindReplicaSet, AppReplicaSet, node)
}

// SetDrainBlocked blocks the drain of the lab node or lets it finish.
// Blocked, the node (which must exist) gets a GuardedReplicaSet pod (even
// when cordoned) under a budget with minAvailable 1 and, as the disruption
// controller would write it, disruptionsAllowed 0: every eviction of the
// pod answers 429. Unblocked, the budget (if any) gets minAvailable 0 and
// disruptionsAllowed 1, so the eviction passes.
func (s *Server) SetDrainBlocked(ctx context.Context, node string, blocked bool) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	name := GuardedReplicaSet + "-" + node
	pdbs := s.client.PolicyV1().PodDisruptionBudgets(WorkloadNamespace)
	if blocked {
		if _, err := s.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("kubeapi: block the drain of %s: %w", node, err)
		}
		if err := s.ensurePod(ctx, kindReplicaSet, GuardedReplicaSet, node); err != nil {
			return err
		}
		sel := selector(GuardedReplicaSet)
		sel.MatchLabels[nodeLabel] = node
		one := intstr.FromInt32(1)
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: sel}}
		if _, err := pdbs.Create(ctx, pdb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubeapi: budget %s: %w", name, err)
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pdb, err := pdbs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		minAvailable := intstr.FromInt32(0)
		if blocked {
			minAvailable = intstr.FromInt32(1)
		}
		if *pdb.Spec.MinAvailable != minAvailable {
			pdb.Spec.MinAvailable = &minAvailable
			if pdb, err = pdbs.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		pdb.Status = budgetStatus(pdb.Generation, blocked)
		_, err = pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
		return err
	})
	if err != nil && (blocked || !apierrors.IsNotFound(err)) {
		return fmt.Errorf("kubeapi: budget %s: %w", name, err)
	}
	return nil
}

// budgetStatus is what the disruption controller writes for a budget of one
// healthy pod that must stay (blocked) or may go.
func budgetStatus(generation int64, blocked bool) policyv1.PodDisruptionBudgetStatus {
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: generation, CurrentHealthy: 1, ExpectedPods: 1, DesiredHealthy: 1}
	if !blocked {
		st.DesiredHealthy, st.DisruptionsAllowed = 0, 1
	}
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, LastTransitionTime: metav1.Now(), ObservedGeneration: generation}
	if blocked {
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	st.Conditions = []metav1.Condition{cond}
	return st
}

// takesPods reports whether the scheduler would put an ordinary pod (no
// tolerations) on node.
func takesPods(node *corev1.Node) bool { return fits(node, &corev1.PodSpec{}) }

// Kinds of the workloads' owners.
const (
	kindDaemonSet  = "DaemonSet"
	kindReplicaSet = "ReplicaSet"
	kindDeployment = "Deployment"
)

// ensurePod creates the pod of the workload app on node unless it exists,
// controlled by its owner of kind (created first unless there): the
// ownerReference is what drain's filters read.
func (s *Server) ensurePod(ctx context.Context, kind, app, node string) error {
	ref, err := s.ensureOwner(ctx, kind, app)
	if err != nil {
		return err
	}
	tmpl := podTemplate(kind, app)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-" + node, Namespace: WorkloadNamespace, Labels: tmpl.Labels, OwnerReferences: []metav1.OwnerReference{ref}},
		Spec:       tmpl.Spec,
	}
	pod.Labels[nodeLabel] = node
	pod.Spec.NodeName = node
	if _, err := s.client.CoreV1().Pods(WorkloadNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubeapi: pod %s: %w", pod.Name, err)
	}
	return nil
}

// ensureOwner creates the workload's namespace and app's owner of kind
// unless they exist, and returns a controller reference to the owner.
func (s *Server) ensureOwner(ctx context.Context, kind, app string) (metav1.OwnerReference, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WorkloadNamespace}}
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return metav1.OwnerReference{}, fmt.Errorf("kubeapi: namespace %s: %w", WorkloadNamespace, err)
	}
	meta, tmpl := metav1.ObjectMeta{Name: app, Namespace: WorkloadNamespace}, podTemplate(kind, app)
	var (
		o   metav1.Object
		err error
	)
	if apps := s.client.AppsV1(); kind == kindDaemonSet {
		c := apps.DaemonSets(WorkloadNamespace)
		o, err = createOrGet(ctx, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector(app), Template: tmpl}}, c.Create, c.Get)
	} else {
		c := apps.ReplicaSets(WorkloadNamespace)
		o, err = createOrGet(ctx, &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: selector(app), Template: tmpl}}, c.Create, c.Get)
	}
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("kubeapi: %s %s: %w", kind, app, err)
	}
	controller := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: &controller, BlockOwnerDeletion: &controller}, nil
}

// createOrGet creates obj unless it exists and returns it as stored.
func createOrGet[T metav1.Object](ctx context.Context, obj T,
	create func(context.Context, T, metav1.CreateOptions) (T, error), get func(context.Context, string, metav1.GetOptions) (T, error),
) (T, error) {
	got, err := create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return get(ctx, obj.GetName(), metav1.GetOptions{})
	}
	return got, err
}

// selector selects the pods of the workload app.
func selector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

// podTemplate is the pod of the workload app, one pause container; a
// DaemonSet's tolerates every taint (as kube-proxy's and the CNI's do).
func podTemplate(kind, app string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "registry.k8s.io/pause:3.10"}}},
	}
	if kind == kindDaemonSet {
		t.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	return t
}
