package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// podsOn lists the pods bound to node, in pages of podListChunk.
func (c *Client) podsOn(ctx context.Context, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
		Limit:         podListChunk,
	}
	var pods []corev1.Pod
	for {
		var page corev1.PodList
		err := c.idempotent(ctx, "list pods on "+node, func(ctx context.Context) error {
			return c.core.Get().Resource("pods").VersionedParams(&opts, c.params).Do(ctx).Into(&page)
		})
		if err != nil {
			return nil, err
		}
		pods = append(pods, page.Items...)
		if page.Continue == "" {
			return pods, nil
		}
		opts.Continue = page.Continue
	}
}

// evict asks the policy/v1 Eviction API to evict the pod with its own
// grace period (kubectl drain's --grace-period=-1).
func (c *Client) evict(ctx context.Context, namespace, name string) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, DeleteOptions: &metav1.DeleteOptions{}}
	return c.request(ctx, "evict pod "+namespace+"/"+name, func(ctx context.Context) error {
		return c.core.Post().Namespace(namespace).Resource("pods").Name(name).SubResource("eviction").Body(ev).Do(ctx).Error()
	})
}

// daemonSetExists asks whether the apps/v1 DaemonSet exists (only the
// answer's status matters: no apps types are linked for it).
func (c *Client) daemonSetExists(ctx context.Context, namespace, name string) (bool, error) {
	err := c.idempotent(ctx, "get daemonset "+namespace+"/"+name, func(ctx context.Context) error {
		return c.core.Get().AbsPath("/apis", daemonSetAPIVersion, "namespaces", namespace, "daemonsets", name).Do(ctx).Error()
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}
