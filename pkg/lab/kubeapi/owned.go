package kubeapi

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	corev1 "k8s.io/api/core/v1"
)

// Talos's node controller applies the configuration's labels and taints to
// its Node and records the keys it applied in an annotation (a JSON list),
// so it changes and removes only those: a key it did not apply whose value
// differs is someone else's and stays as it is.

// applyLabels makes the Talos-owned labels of node exactly want.
func applyLabels(node *corev1.Node, want map[string]string) {
	owned := ownedKeys(node, constants.AnnotationOwnedLabels)
	for k, v := range want {
		cur, set := node.Labels[k]
		switch {
		case !set || owned[k]:
			node.Labels[k] = v
			owned[k] = true
		case cur == v:
			owned[k] = true
		}
	}
	for k := range owned {
		if _, ok := want[k]; !ok {
			delete(node.Labels, k)
			delete(owned, k)
		}
	}
	setOwnedKeys(node, constants.AnnotationOwnedLabels, owned)
}

// applyTaints makes the Talos-owned taints of node exactly want (one taint
// per key).
func applyTaints(node *corev1.Node, want []corev1.Taint) {
	owned := ownedKeys(node, constants.AnnotationOwnedTaints)
	for _, t := range want {
		i := slices.IndexFunc(node.Spec.Taints, func(c corev1.Taint) bool { return c.Key == t.Key })
		switch {
		case i < 0:
			node.Spec.Taints = append(node.Spec.Taints, t)
			owned[t.Key] = true
		case owned[t.Key]:
			node.Spec.Taints[i].Value, node.Spec.Taints[i].Effect = t.Value, t.Effect
		case node.Spec.Taints[i].Value == t.Value && node.Spec.Taints[i].Effect == t.Effect:
			owned[t.Key] = true
		}
	}
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(c corev1.Taint) bool {
		if !owned[c.Key] || slices.ContainsFunc(want, func(t corev1.Taint) bool { return t.Key == c.Key }) {
			return false
		}
		delete(owned, c.Key)
		return true
	})
	setOwnedKeys(node, constants.AnnotationOwnedTaints, owned)
}

// ownedKeys reads an ownership annotation; a malformed one owns nothing.
func ownedKeys(node *corev1.Node, annotation string) map[string]bool {
	var keys []string
	_ = json.Unmarshal([]byte(node.Annotations[annotation]), &keys)
	owned := make(map[string]bool, len(keys))
	for _, k := range keys {
		owned[k] = true
	}
	return owned
}

// setOwnedKeys writes an ownership annotation (sorted), or removes it when
// nothing is owned.
func setOwnedKeys(node *corev1.Node, annotation string, owned map[string]bool) {
	if len(owned) == 0 {
		delete(node.Annotations, annotation)
		return
	}
	b, _ := json.Marshal(slices.Sorted(maps.Keys(owned))) // a []string always marshals
	node.Annotations[annotation] = string(b)
}
