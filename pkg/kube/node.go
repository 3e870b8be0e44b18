package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The merge patches kubectl's cordon and uncordon amount to (kubectl
// computes a patch from the old and new Node; unschedulable is omitempty,
// so uncordoning removes the field).
const (
	cordonPatch   = `{"spec":{"unschedulable":true}}`
	uncordonPatch = `{"spec":{"unschedulable":null}}`
)

// Cordon marks the node unschedulable (kubectl cordon). A missing node is
// an error: there is nothing to keep pods off.
func (c *Client) Cordon(ctx context.Context, node string) error {
	return c.patchNode(ctx, "cordon node "+node, node, cordonPatch)
}

// Uncordon makes the node schedulable again (kubectl uncordon). A missing
// node is already as schedulable as it will get: done.
func (c *Client) Uncordon(ctx context.Context, node string) error {
	err := c.patchNode(ctx, "uncordon node "+node, node, uncordonPatch)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Client) patchNode(ctx context.Context, what, node, patch string) error {
	return c.idempotent(ctx, what, func(ctx context.Context) error {
		return c.core.Patch(types.MergePatchType).Resource("nodes").Name(node).Body([]byte(patch)).Do(ctx).Error()
	})
}

// DeleteNode deletes the Node object (the scale-down step after the
// machine's reset, I-S3: Talos never deletes it). A node already gone is
// done.
func (c *Client) DeleteNode(ctx context.Context, node string) error {
	err := c.idempotent(ctx, "delete node "+node, func(ctx context.Context) error {
		return c.core.Delete().Resource("nodes").Name(node).Body(&metav1.DeleteOptions{}).Do(ctx).Error()
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
