package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// syncDeployment runs the kube-system Deployment name as the Deployment
// controller does, through ReplicaSets: the one of its template
// (<deployment>-<pod-template-hash>, created if missing) is scaled to
// spec.replicas and every older one to 0 at once (no maxSurge or
// maxUnavailable pacing), each ReplicaSet's pods follow (syncReplicaSet),
// and the status is written from the pods as they are.
func (c *controllers) syncDeployment(ctx context.Context, name string) error {
	d, err := c.deps.Get(name)
	if err != nil {
		return nil // gone
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	hash := templateHash(&d.Spec.Template)
	all, _ := c.rss.List(labels.Everything())
	rss := slices.DeleteFunc(all, func(rs *appsv1.ReplicaSet) bool { return !metav1.IsControlledBy(rs, d) })
	i := slices.IndexFunc(rss, func(rs *appsv1.ReplicaSet) bool { return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash })
	if i < 0 {
		rs, err := c.createReplicaSet(ctx, d, hash, replicas)
		if err != nil {
			return err
		}
		rss, i = append(rss, rs), len(rss)
	}
	newRS := rss[i].Name
	nodes := c.nodes()
	pods, load := map[string][]*corev1.Pod{}, map[string]int{}
	for _, rs := range rss {
		pods[rs.Name] = c.ownedPods(rs)
		for _, p := range pods[rs.Name] {
			if podActive(p) && p.Spec.NodeName != "" {
				load[p.Spec.NodeName]++
			}
		}
	}
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, CollisionCount: d.Status.CollisionCount}
	var errs []error
	for _, rs := range rss {
		want := int32(0)
		if rs.Name == newRS {
			want = replicas
		}
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != want {
			scaled := rs.DeepCopy()
			scaled.Spec.Replicas = &want
			if rs, err = c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, scaled, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("kubeapi: scale ReplicaSet %s: %w", scaled.Name, err))
				continue
			}
		}
		rst, err := c.syncReplicaSet(ctx, rs, pods[rs.Name], nodes, load)
		errs = append(errs, err)
		st.Replicas += rst.Replicas
		st.ReadyReplicas += rst.ReadyReplicas
		st.AvailableReplicas += rst.AvailableReplicas
		if rs.Name == newRS {
			st.UpdatedReplicas = rst.Replicas
		}
	}
	st.UnavailableReplicas = max(replicas-st.AvailableReplicas, 0)
	st.Conditions = deploymentConditions(d, newRS, replicas, st)
	if !equality.Semantic.DeepEqual(d.Status, st) {
		d = d.DeepCopy()
		d.Status = st
		if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("kubeapi: Deployment %s status: %w", d.Name, err))
		}
	}
	return errors.Join(errs...)
}

// createReplicaSet creates d's ReplicaSet of the template with hash, as
// the Deployment controller does (the pod-template-hash label on it, its
// selector and its template).
func (c *controllers) createReplicaSet(ctx context.Context, d *appsv1.Deployment, hash string, replicas int32) (*appsv1.ReplicaSet, error) {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: maps.Clone(tmpl.Labels),
			OwnerReferences: []metav1.OwnerReference{controllerRef(d, kindDeployment)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl},
	}
	api := c.client.AppsV1().ReplicaSets(d.Namespace)
	got, err := createOrGet(ctx, rs, api.Create, api.Get)
	if err != nil {
		return nil, fmt.Errorf("kubeapi: ReplicaSet %s: %w", rs.Name, err)
	}
	return got, nil
}

// syncReplicaSet makes rs's active pods spec.replicas, as the ReplicaSet
// controller and the scheduler do: the last by name go, new ones are named
// <rs>-<5 characters> and placed on the node they fit running the fewest
// of the Deployment's pods (load), unscheduled ones are bound once a node
// fits. It writes rs's status from the pods as they are and returns it.
func (c *controllers) syncReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod, nodes []*corev1.Node, load map[string]int) (appsv1.ReplicaSetStatus, error) {
	active := slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return !podActive(p) })
	slices.SortFunc(active, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	st := appsv1.ReplicaSetStatus{Replicas: int32(len(active)), FullyLabeledReplicas: int32(len(active)), ObservedGeneration: rs.Generation}
	for _, p := range active {
		if podReady(p) {
			st.ReadyReplicas++
			st.AvailableReplicas++
		}
	}
	var errs []error
	want := int(*rs.Spec.Replicas)
	if len(active) > want {
		for _, p := range active[want:] {
			load[p.Spec.NodeName]--
		}
		errs = append(errs, c.deletePods(ctx, active[want:]))
		active = active[:want]
	}
	for _, p := range active {
		if p.Spec.NodeName == "" {
			errs = append(errs, c.bind(ctx, p, place(nodes, &p.Spec, load)))
		}
	}
	// A new pod takes the first name no pod has (a terminating one still
	// holds its own): the informer sees pods in order, so asking again
	// from an outdated view asks for the same name.
	for i, missing := 0, want-len(active); missing > 0; i++ {
		name := rs.Name + "-" + podSuffix(string(rs.UID), strconv.Itoa(i))
		if _, err := c.kubelet.pods.Pods(rs.Namespace).Get(name); err == nil {
			continue
		}
		pod := newPod(name, &rs.Spec.Template, controllerRef(rs, kindReplicaSet), nil)
		pod.Spec.NodeName = place(nodes, &pod.Spec, load)
		errs = append(errs, c.createPod(ctx, pod))
		missing--
	}
	if !equality.Semantic.DeepEqual(rs.Status, st) {
		rs = rs.DeepCopy()
		rs.Status = st
		if _, err := c.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("kubeapi: ReplicaSet %s status: %w", rs.Name, err))
		}
	}
	return st, errors.Join(errs...)
}

// bind binds an unscheduled pod to node, as the scheduler does; "" (no
// node fits) leaves it Pending.
func (c *controllers) bind(ctx context.Context, p *corev1.Pod, node string) error {
	if node == "" {
		return nil
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := c.client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubeapi: bind pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// deploymentConditions are the Available and Progressing conditions the
// Deployment controller writes for st (kstatus and kubectl rollout status
// read them), keeping the times of those that did not change.
func deploymentConditions(d *appsv1.Deployment, newRS string, replicas int32, st appsv1.DeploymentStatus) []appsv1.DeploymentCondition {
	maxUnavailable := 0
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(replicas), false)
	}
	available := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
	if int(st.AvailableReplicas) < int(replicas)-maxUnavailable {
		available.Status, available.Reason, available.Message = corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
	}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", Message: fmt.Sprintf("ReplicaSet %q is progressing.", newRS)}
	if st.UpdatedReplicas == replicas && st.Replicas == replicas && st.AvailableReplicas == replicas {
		progressing.Reason, progressing.Message = "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS)
	}
	now := metav1.Now()
	out := []appsv1.DeploymentCondition{available, progressing}
	for i := range out {
		c := &out[i]
		c.LastUpdateTime, c.LastTransitionTime = now, now
		j := slices.IndexFunc(d.Status.Conditions, func(old appsv1.DeploymentCondition) bool { return old.Type == c.Type })
		if j < 0 || d.Status.Conditions[j].Status != c.Status {
			continue
		}
		old := d.Status.Conditions[j]
		c.LastTransitionTime = old.LastTransitionTime
		if old.Reason == c.Reason && old.Message == c.Message {
			c.LastUpdateTime = old.LastUpdateTime
		}
	}
	return out
}
