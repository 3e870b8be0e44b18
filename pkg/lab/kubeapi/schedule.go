package kubeapi

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// fits reports whether the scheduler would put a pod of spec on node: the
// node takes new pods (not cordoned) unless the pod tolerates
// node.kubernetes.io/unschedulable, it has the labels of the pod's
// nodeSelector, and the pod tolerates each of its NoSchedule and NoExecute
// taints. Node affinity is not looked at.
func fits(node *corev1.Node, spec *corev1.PodSpec) bool {
	cordon := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if node.Spec.Unschedulable && !tolerated(spec.Tolerations, &cordon) {
		return false
	}
	for k, v := range spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !tolerated(spec.Tolerations, t) {
			return false
		}
	}
	return true
}

// tolerated reports whether one of tolerations tolerates taint
// (corev1.Toleration.ToleratesTaint without the comparison operators,
// which would need a logger).
func tolerated(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for _, t := range tolerations {
		switch {
		case t.Effect != "" && t.Effect != taint.Effect:
		case t.Key != "" && t.Key != taint.Key:
		case t.Operator == corev1.TolerationOpExists,
			(t.Operator == "" || t.Operator == corev1.TolerationOpEqual) && t.Value == taint.Value:
			return true
		}
	}
	return false
}

// place picks the node for a new pod of spec, as the default scheduler
// spreads a workload: of the nodes it fits, the one running the fewest of
// the workload's pods (load), the first by name among equals; "" when it
// fits none. The chosen node's load grows.
func place(nodes []*corev1.Node, spec *corev1.PodSpec, load map[string]int) string {
	best := ""
	for _, n := range nodes {
		if fits(n, spec) && (best == "" || load[n.Name] < load[best]) {
			best = n.Name
		}
	}
	if best != "" {
		load[best]++
	}
	return best
}

// templateHash is what the controllers label the pods of a template with
// (pod-template-hash, controller-revision-hash): it changes with the
// template, as an image change does, and names a Deployment's ReplicaSet.
func templateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t) // API types always marshal
	_, _ = h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// podSuffix is the five characters a controller's generateName would add,
// derived from parts instead of random: the same pod asked for twice (an
// informer behind the API) gets the same name, so the second create is
// AlreadyExists rather than a second pod.
func podSuffix(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	const alphanums = "bcdfghjklmnpqrstvwxz2456789" // k8s.io/apimachinery/pkg/util/rand's
	n, b := h.Sum64(), make([]byte, 5)
	for i := range b {
		b[i] = alphanums[n%uint64(len(alphanums))]
		n /= uint64(len(alphanums))
	}
	return string(b)
}

// newPod is the kube-system pod name of template t, controlled by owner,
// with the controller's labels added to the template's.
func newPod(name string, t *corev1.PodTemplateSpec, owner metav1.OwnerReference, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
	p.Name, p.GenerateName, p.Namespace = name, "", metav1.NamespaceSystem
	p.OwnerReferences = []metav1.OwnerReference{owner}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	maps.Copy(p.Labels, labels)
	return p
}

// podActive reports whether a pod counts for its controller: neither
// being deleted nor finished.
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podReady reports whether a pod is Ready.
func podReady(p *corev1.Pod) bool { return podReadiness(p) == corev1.ConditionTrue }
