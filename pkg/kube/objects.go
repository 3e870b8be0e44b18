package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Ref names one object by its API path: APIVersion ("v1", "apps/v1"), the
// plural Resource, Namespace ("" for a cluster-scoped one) and Name.
type Ref struct {
	APIVersion, Resource, Namespace, Name string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Resource + " " + r.Name
	}
	return r.Resource + " " + r.Namespace + "/" + r.Name
}

func (r Ref) path() ([]string, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("kube %s: %w", r, err)
	}
	p := groupVersionPath(gv)
	if r.Namespace != "" {
		p = append(p, "namespaces", r.Namespace)
	}
	return append(p, r.Resource, r.Name), nil
}

// Get reads the object ref into out (its JSON decoded), reporting false
// when it does not exist. Any other failure is an error: an unreadable
// object is never taken for an absent one.
func (c *Client) Get(ctx context.Context, ref Ref, out any) (bool, error) {
	p, err := ref.path()
	if err != nil {
		return false, err
	}
	var raw []byte
	found := true
	err = c.idempotent(ctx, "get "+ref.String(), func(ctx context.Context) error {
		raw, err = c.core.Get().AbsPath(p...).Do(ctx).Raw()
		if apierrors.IsNotFound(err) {
			found, err = false, nil
		}
		return err
	})
	if err != nil || !found {
		return false, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("kube get %s: %w", ref, err)
	}
	return true, nil
}

// Delete deletes the object ref; one already gone is done.
func (c *Client) Delete(ctx context.Context, ref Ref) error {
	p, err := ref.path()
	if err != nil {
		return err
	}
	return c.idempotent(ctx, "delete "+ref.String(), func(ctx context.Context) error {
		err := c.core.Delete().AbsPath(p...).Do(ctx).Error()
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// DeleteUID deletes the object ref only while it is the object with uid
// (a precondition the API checks): one replaced since it was read is left
// alone with an error. One already gone is done.
func (c *Client) DeleteUID(ctx context.Context, ref Ref, uid string) error {
	p, err := ref.path()
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: (*types.UID)(&uid)}}
	body, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("kube delete %s: %w", ref, err)
	}
	return c.idempotent(ctx, "delete "+ref.String(), func(ctx context.Context) error {
		err := c.core.Delete().AbsPath(p...).Body(body).Do(ctx).Error()
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// MergePatch applies a JSON merge patch to the object ref.
func (c *Client) MergePatch(ctx context.Context, ref Ref, patch []byte) error {
	p, err := ref.path()
	if err != nil {
		return err
	}
	return c.idempotent(ctx, "patch "+ref.String(), func(ctx context.Context) error {
		return c.core.Patch(types.MergePatchType).AbsPath(p...).Body(patch).Do(ctx).Error()
	})
}
