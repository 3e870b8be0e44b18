package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// syncDaemonSet gives the kube-system DaemonSet name one pod on every Node
// its pods fit (daemonTolerations added), as the DaemonSet controller
// does: a pod of an older template is deleted and, once gone, replaced
// (every node at once: no maxUnavailable pacing); a pod on a node it no
// longer fits is deleted. It writes the status from the pods as they are.
// Pods of a deleted Node are the lab kubelet's pod garbage collector's; a
// deleted DaemonSet leaves its pods (no garbage collector).
func (c *controllers) syncDaemonSet(ctx context.Context, name string) error {
	ds, err := c.dss.Get(name)
	if err != nil {
		return nil // gone
	}
	hash := templateHash(&ds.Spec.Template)
	tmpl := ds.Spec.Template.DeepCopy()
	tmpl.Spec.Tolerations = daemonTolerations(&tmpl.Spec)
	byNode := map[string][]*corev1.Pod{}
	for _, p := range c.ownedPods(ds) {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount, Conditions: ds.Status.Conditions}
	var errs []error
	for _, n := range c.nodes() {
		pods := byNode[n.Name]
		active := slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return !podActive(p) })
		if !fits(n, &tmpl.Spec) {
			if len(active) > 0 {
				st.NumberMisscheduled++
			}
			errs = append(errs, c.deletePods(ctx, active))
			continue
		}
		st.DesiredNumberScheduled++
		if len(active) == 0 {
			if !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }) {
				errs = append(errs, c.createDaemonPod(ctx, ds, tmpl, hash, n.Name))
			} // else the new pod waits for the old one to go
			continue
		}
		// the node's pod is the first of this template, else the first by
		// name (until it goes); the others go
		slices.SortFunc(active, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		updated := func(p *corev1.Pod) bool { return p.Labels[appsv1.ControllerRevisionHashLabelKey] == hash }
		if i := slices.IndexFunc(active, updated); i > 0 {
			active[0], active[i] = active[i], active[0]
		}
		cur, drop := active[0], active[1:]
		st.CurrentNumberScheduled++
		if podReady(cur) {
			st.NumberReady++
			st.NumberAvailable++
		}
		if updated(cur) {
			st.UpdatedNumberScheduled++
		} else {
			drop = active
		}
		errs = append(errs, c.deletePods(ctx, drop))
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if !equality.Semantic.DeepEqual(ds.Status, st) {
		ds = ds.DeepCopy()
		ds.Status = st
		if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("kubeapi: DaemonSet %s status: %w", ds.Name, err))
		}
	}
	return errors.Join(errs...)
}

// daemonSetTemplateGeneration labels a DaemonSet's pod with the
// DaemonSet's generation when it was made (extensions/v1beta1's
// DaemonSetTemplateGenerationKey, which the controller still sets).
const daemonSetTemplateGeneration = "pod-template-generation"

// createDaemonPod creates ds's pod (of tmpl, hash) on node, named as the
// DaemonSet controller names them (<ds>-<5 characters>) and bound at once.
func (c *controllers) createDaemonPod(ctx context.Context, ds *appsv1.DaemonSet, tmpl *corev1.PodTemplateSpec, hash, node string) error {
	pod := newPod(ds.Name+"-"+podSuffix(string(ds.UID), node, hash), tmpl, controllerRef(ds, kindDaemonSet), map[string]string{
		appsv1.ControllerRevisionHashLabelKey: hash,
		daemonSetTemplateGeneration:           strconv.FormatInt(ds.Generation, 10),
	})
	pod.Spec.NodeName = node
	return c.createPod(ctx, pod)
}

// daemonTolerations are spec's tolerations and those the DaemonSet
// controller adds to its pods (k8s.io/kubernetes pkg/controller/daemon/util):
// they stay on nodes not ready or unreachable, and run on nodes under
// pressure or cordoned (and, with the host's network, without a network).
func daemonTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	add := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if spec.HostNetwork {
		add = append(add, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	out := slices.Clone(spec.Tolerations)
	for _, t := range add {
		if !slices.ContainsFunc(out, func(have corev1.Toleration) bool { return have.MatchToleration(&t) }) {
			out = append(out, t)
		}
	}
	return out
}
