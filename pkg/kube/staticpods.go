package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// configVersionAnnotation is the version of the Talos configuration a
// control-plane mirror pod runs (machinery's
// constants.AnnotationStaticPodConfigVersion).
const configVersionAnnotation = "talos.dev/config-version"

// StaticPod is the mirror pod of a control-plane component's static pod
// on one node, as upgrade-k8s waits for it after a config change: on the
// node (HostIP), annotated with the new configuration's version
// (ConfigVersion ≥ talosapi's ConfigVersion), Ready.
type StaticPod struct {
	// Name is the pod's ("kube-apiserver-<node>").
	Name string
	// Node is the node it is bound to, HostIP that node's address as the
	// kubelet reports it ("" until it runs).
	Node, HostIP string
	// Image is the component's container image (the container named as
	// the component, else the first).
	Image string
	// ConfigVersion is the pod's talos.dev/config-version annotation,
	// "" when it has none.
	ConfigVersion string
	// Ready is the pod's Ready condition.
	Ready bool
}

// StaticPods lists the kube-system pods labelled k8s-app=component (what
// Talos labels its control-plane static pods with: kube-apiserver,
// kube-controller-manager, kube-scheduler), in the API's order.
func (c *Client) StaticPods(ctx context.Context, component string) ([]StaticPod, error) {
	var list corev1.PodList
	opts := metav1.ListOptions{LabelSelector: labels.Set{"k8s-app": component}.String()}
	err := c.idempotent(ctx, "list pods k8s-app="+component, func(ctx context.Context) error {
		return c.core.Get().Namespace(metav1.NamespaceSystem).Resource("pods").VersionedParams(&opts, c.params).Do(ctx).Into(&list)
	})
	if err != nil {
		return nil, err
	}
	out := make([]StaticPod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, staticPodOf(&list.Items[i], component))
	}
	return out, nil
}

func staticPodOf(p *corev1.Pod, component string) StaticPod {
	sp := StaticPod{Name: p.Name, Node: p.Spec.NodeName, HostIP: p.Status.HostIP, ConfigVersion: p.Annotations[configVersionAnnotation]}
	for i, ct := range p.Spec.Containers {
		if i == 0 || ct.Name == component {
			sp.Image = ct.Image
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			sp.Ready = cond.Status == corev1.ConditionTrue
		}
	}
	return sp
}
