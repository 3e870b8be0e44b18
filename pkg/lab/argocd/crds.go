package argocd

import (
	"context"
	"embed"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// The CRDs, unmodified from Argo CD's manifests/crds (see crds/README.md).
//
//go:embed crds/application-crd.yaml crds/appproject-crd.yaml
var crdFiles embed.FS

// CRD names and the resources they define.
const (
	ApplicationCRD = "applications.argoproj.io"
	AppProjectCRD  = "appprojects.argoproj.io"
	// Group and Version of the Argo CD resources.
	Group   = "argoproj.io"
	Version = "v1alpha1"
	// FieldManager is the lab's server-side apply field manager.
	FieldManager = "talosc-lab"
)

// CRDGVR is the CustomResourceDefinition resource.
func CRDGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
}

// ApplicationGVR is the resource of Argo CD Applications.
func ApplicationGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: "applications"}
}

// AppProjectGVR is the resource of Argo CD AppProjects.
func AppProjectGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: "appprojects"}
}

// CRDs returns the embedded CRD manifests (YAML), Application first.
func CRDs() ([][]byte, error) {
	var out [][]byte
	for _, name := range []string{"crds/application-crd.yaml", "crds/appproject-crd.yaml"} {
		b, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("argocd: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}

// installCRDs server-side applies the embedded CRDs and waits until the
// apiserver reports each Established (and its names Accepted).
func installCRDs(ctx context.Context, dyn dynamic.Interface, poll time.Duration) error {
	manifests, err := CRDs()
	if err != nil {
		return err
	}
	crds := dyn.Resource(CRDGVR())
	var names []string
	for _, m := range manifests {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(m, &obj.Object); err != nil {
			return fmt.Errorf("argocd: CRD manifest: %w", err)
		}
		_, err := crds.Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("argocd: apply CRD %s: %w", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	for _, name := range names {
		if err := waitEstablished(ctx, dyn, name, poll); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string, poll time.Duration) error {
	var last string
	for {
		obj, err := dyn.Resource(CRDGVR()).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if established(obj) {
				return nil
			}
			last = "not Established yet"
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("argocd: CRD %s not Established (%s): %w", name, last, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// established reports whether a CRD has conditions Established and
// NamesAccepted True.
func established(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	want := map[string]bool{"Established": false, "NamesAccepted": false}
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		if _, ok := want[t]; ok && m["status"] == "True" {
			want[t] = true
		}
	}
	return want["Established"] && want["NamesAccepted"]
}
