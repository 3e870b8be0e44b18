package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// NodeByName returns the named node (tests only: the nodes phase lists
// them once per step); found is false (with no error) when
// the API has no such Node, so "gone" and "could not ask" never look alike.
func (c *Client) NodeByName(ctx context.Context, name string) (n Node, found bool, err error) {
	var obj corev1.Node
	err = c.request(ctx, "get node "+name, func(ctx context.Context) error {
		return c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(&obj)
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Node{}, false, nil
		}
		return Node{}, false, err
	}
	return nodeOf(&obj), true, nil
}
