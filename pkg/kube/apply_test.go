package kube_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
)

const manager = "talos"

// proxyDaemonSet is a kube-proxy-like DaemonSet at image (namespace ns).
func proxyDaemonSet(ns, image string) map[string]any {
	labels := map[string]any{"k8s-app": "proxy"}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "proxy", "namespace": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "proxy", "image": image}}},
			},
		},
	}
}

// checkApply: Apply creates, then updates, a namespaced DaemonSet, a
// ConfigMap without a namespace (into "default") and a ClusterRole
// carrying one (ignored); applying the same again changes nothing; a
// field another manager took is forced back; each group-version is
// discovered once.
func checkApply(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	ctx := t.Context()
	cs := srv.Client()
	createNamespace(t, cs, "apply")
	cm := func(v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "apply-cm"}, "data": map[string]any{"key": v}}
	}
	role := func(verb string) map[string]any {
		return map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": "apply-role", "namespace": "apply"},
			"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{verb}}},
		}
	}
	apply := func(objs ...map[string]any) {
		t.Helper()
		for _, o := range objs {
			if err := k.Apply(ctx, o, manager); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := count(srv, "/apis/apps/v1")
	apply(proxyDaemonSet("apply", "registry.k8s.io/kube-proxy:v1.35.4"), cm("one"), role("get"))
	apply(proxyDaemonSet("apply", "registry.k8s.io/kube-proxy:v1.36.1"), cm("two"), role("list"))

	ds, err := cs.AppsV1().DaemonSets("apply").Get(ctx, "proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; img != "registry.k8s.io/kube-proxy:v1.36.1" || ds.Generation != 2 {
		t.Errorf("DaemonSet after two applies: image %s, generation %d; want v1.36.1, 2", img, ds.Generation)
	}
	if mf := ds.ManagedFields; len(mf) != 1 || mf[0].Manager != manager || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("DaemonSet managed fields = %+v, want one Apply by %s", mf, manager)
	}
	got, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "apply-cm", metav1.GetOptions{})
	if err != nil || got.Data["key"] != "two" {
		t.Fatalf("ConfigMap in default = %v, %v; want key two", got, err)
	}
	cr, err := cs.RbacV1().ClusterRoles().Get(ctx, "apply-role", metav1.GetOptions{})
	if err != nil || cr.Rules[0].Verbs[0] != "list" {
		t.Fatalf("ClusterRole = %v, %v; want verb list", cr, err)
	}

	// the same again: nothing changes
	apply(proxyDaemonSet("apply", "registry.k8s.io/kube-proxy:v1.36.1"), cm("two"), role("list"))
	ds2, err := cs.AppsV1().DaemonSets("apply").Get(ctx, "proxy", metav1.GetOptions{})
	if err != nil || ds2.ResourceVersion != ds.ResourceVersion {
		t.Errorf("a repeated apply changed the DaemonSet: resourceVersion %s → %s (%v)", ds.ResourceVersion, ds2.ResourceVersion, err)
	}
	if n := count(srv, "/apis/apps/v1") - before; n != 1 {
		t.Errorf("apps/v1 discovered %d times for three applies, want once", n)
	}

	// another manager's change is forced back
	got.Data["key"] = "theirs"
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Update(ctx, got, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	apply(cm("two"))
	if got, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "apply-cm", metav1.GetOptions{}); err != nil || got.Data["key"] != "two" {
		t.Errorf("ConfigMap after a forced apply = %v, %v; want key two", got.Data, err)
	}

	for _, tc := range []struct {
		obj  map[string]any
		want string
	}{
		{map[string]any{"apiVersion": "apps/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"}}, "kube discover apps/v1: the API serves no kind Gizmo"},
		{map[string]any{"apiVersion": "example.invalid/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"}}, "kube discover example.invalid/v1: the server could not find the requested resource"},
		{map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, `kube apply: an object needs an apiVersion, kind and name (it has "v1", "ConfigMap", "")`},
	} {
		if err := k.Apply(ctx, tc.obj, manager); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Apply(%v) = %v, want %q", tc.obj, err, tc.want)
		}
	}
}

// checkApplyCRD: a kind the cached discovery of its group-version lacks
// (its CustomResourceDefinition applied since) is looked up afresh.
func checkApplyCRD(t *testing.T, k *kube.Client) {
	t.Helper()
	ctx := t.Context()
	crd := func(kind, plural string) map[string]any {
		return map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + ".lab.talosc.dev"},
			"spec": map[string]any{
				"group": "lab.talosc.dev", "scope": "Namespaced",
				"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				}},
			},
		}
	}
	object := func(kind string) map[string]any {
		return map[string]any{"apiVersion": "lab.talosc.dev/v1", "kind": kind, "metadata": map[string]any{"name": "one", "namespace": "default"}, "spec": map[string]any{"size": int64(1)}}
	}
	// applyServed applies kind's CRD, then an object of it once served.
	applyServed := func(kind, plural string) {
		t.Helper()
		if err := k.Apply(ctx, crd(kind, plural), manager); err != nil {
			t.Fatal(err)
		}
		waitFor(t, kind+" served", func(ctx context.Context) (bool, error) {
			return k.Apply(ctx, object(kind), manager) == nil, nil
		})
	}
	applyServed("Widget", "widgets")
	applyServed("Gadget", "gadgets") // lab.talosc.dev/v1 is cached without gadgets by now

	dyn, err := dynamic.NewForConfig(k.RESTConfig()) // as go-kubernetes' upgrade checks use it
	if err != nil {
		t.Fatal(err)
	}
	for _, plural := range []string{"widgets", "gadgets"} {
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: "lab.talosc.dev", Version: "v1", Resource: plural}).Namespace("default").Get(ctx, "one", metav1.GetOptions{}); err != nil {
			t.Errorf("%s/one: %v", plural, err)
		}
	}
}
