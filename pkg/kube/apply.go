package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// discovery is the API's discovery documents (the resources of one
// group-version, GET /api/v1 or /apis/<group>/<version>), asked once per
// group-version and client. client-go's discovery package is not used:
// it links client-go's all-groups scheme, the 15 MB this package avoids.
type discovery struct {
	mu  sync.Mutex
	gvs map[string][]metav1.APIResource
}

// Apply server-side applies obj (an unstructured object, as
// Talos's bootstrap manifests are) as fieldManager, forcing conflicts
// (upgrade-k8s's manifest sync applies with Force): the object is created
// or updated to what obj says, and applying it again changes nothing. Its
// resource and scope come from the API's discovery: a namespaced object
// without a namespace goes to "default" (as kubectl apply), a
// cluster-scoped one ignores its namespace. A kind the cached discovery
// lacks (a CustomResourceDefinition applied since) is looked up afresh
// once.
func (c *Client) Apply(ctx context.Context, obj map[string]any, fieldManager string) error {
	_, err := c.apply(ctx, obj, fieldManager, false)
	return err
}

// ApplyDryRun is Apply with the API's server-side dry run (dryRun=All):
// nothing is stored, and it returns the object as the apply would leave
// it (defaults, admission and the CRD's schema included), which a caller
// compares with the live object to tell whether an apply would change
// anything. A namespaced object whose namespace does not exist fails as
// the real apply would.
func (c *Client) ApplyDryRun(ctx context.Context, obj map[string]any, fieldManager string) (map[string]any, error) {
	raw, err := c.apply(ctx, obj, fieldManager, true)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("kube apply (dry run): %w", err)
	}
	return out, nil
}

// apply sends the server-side apply and returns the API's answer.
func (c *Client) apply(ctx context.Context, obj map[string]any, fieldManager string, dryRun bool) ([]byte, error) {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" || u.GetName() == "" {
		return nil, fmt.Errorf("kube apply: an object needs an apiVersion, kind and name (it has %q, %q, %q)", u.GetAPIVersion(), gvk.Kind, u.GetName())
	}
	what := fmt.Sprintf("apply %s %s", gvk.Kind, u.GetName())
	res, err := c.resourceFor(ctx, gvk)
	if err != nil {
		return nil, err
	}
	path := groupVersionPath(gvk.GroupVersion())
	switch ns := u.GetNamespace(); {
	case res.Namespaced && ns == "":
		ns = metav1.NamespaceDefault
		fallthrough
	case res.Namespaced:
		path = append(path, "namespaces", ns)
		what = fmt.Sprintf("apply %s %s/%s", gvk.Kind, ns, u.GetName())
	case ns != "":
		u = u.DeepCopy()
		u.SetNamespace("")
	}
	body, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("kube %s: %w", what, err)
	}
	var out []byte
	err = c.idempotent(ctx, what, func(ctx context.Context) error {
		req := c.core.Patch(types.ApplyPatchType).AbsPath(append(path, res.Name, u.GetName())...).
			Param("fieldManager", fieldManager).Param("force", "true")
		if dryRun {
			req = req.Param("dryRun", metav1.DryRunAll)
		}
		// Error, not Raw's error: only Error decodes the API's Status
		// (which fields a schema refused).
		res := req.Body(body).Do(ctx)
		if err := res.Error(); err != nil {
			return err
		}
		out, _ = res.Raw()
		return nil
	})
	return out, err
}

// resourceFor finds the resource serving gvk (not a subresource) in the
// discovery of its group-version, asking the API again when the cached
// one lacks it.
func (c *Client) resourceFor(ctx context.Context, gvk schema.GroupVersionKind) (metav1.APIResource, error) {
	gv := gvk.GroupVersion().String()
	for fresh := false; ; fresh = true {
		list, fetched, err := c.discover(ctx, gvk.GroupVersion(), fresh)
		if err != nil {
			return metav1.APIResource{}, err
		}
		for _, r := range list {
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				return r, nil
			}
		}
		if fetched {
			return metav1.APIResource{}, fmt.Errorf("kube discover %s: the API serves no kind %s", gv, gvk.Kind)
		}
	}
}

// discover returns gv's resources, from the cache unless fresh; fetched
// reports that the API was asked.
func (c *Client) discover(ctx context.Context, gv schema.GroupVersion, fresh bool) (list []metav1.APIResource, fetched bool, err error) {
	key := gv.String()
	c.disc.mu.Lock()
	list, ok := c.disc.gvs[key]
	c.disc.mu.Unlock()
	if ok && !fresh {
		return list, false, nil
	}
	var doc metav1.APIResourceList
	err = c.idempotent(ctx, "discover "+key, func(ctx context.Context) error {
		raw, err := c.core.Get().AbsPath(groupVersionPath(gv)...).Do(ctx).Raw()
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &doc)
	})
	if err != nil {
		return nil, true, err
	}
	c.disc.mu.Lock()
	defer c.disc.mu.Unlock()
	if c.disc.gvs == nil {
		c.disc.gvs = map[string][]metav1.APIResource{}
	}
	c.disc.gvs[key] = doc.APIResources
	return doc.APIResources, true, nil
}

// groupVersionPath is the API path of a group-version: /api/v1 for the
// core group, /apis/<group>/<version> for the others.
func groupVersionPath(gv schema.GroupVersion) []string {
	if gv.Group == "" {
		return []string{"/api", gv.Version}
	}
	return []string{"/apis", gv.Group, gv.Version}
}
