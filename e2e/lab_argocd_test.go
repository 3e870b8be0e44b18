package e2e

import (
	"context"
	"fmt"

	"github.com/rogpeppe/go-internal/testscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/talosc/talosc/pkg/lab/argocd"
)

// argocdObjects runs "lab argocd-objects N": the lab's Argo CD management
// cluster holds N Secrets, AppProjects and Applications labelled for the
// script's cluster (talosc.io/cluster), read straight from its apiserver.
func (s *scriptLab) argocdObjects(ts *testscript.TestScript, args []string) {
	m := s.lab.ArgoCD
	if m == nil {
		ts.Fatalf("lab argocd-objects: the lab runs no Argo CD management cluster (lab up --argocd)")
	}
	ctx, sel := context.Background(), metav1.ListOptions{LabelSelector: "talosc.io/cluster=" + s.cluster}
	var names []string
	secrets, err := m.Client().CoreV1().Secrets(argocd.Namespace).List(ctx, sel)
	ts.Check(err)
	for _, o := range secrets.Items {
		names = append(names, "Secret "+o.Name)
	}
	for _, r := range []struct {
		kind string
		gvr  schema.GroupVersionResource
	}{{"AppProject", argocd.AppProjectGVR()}, {"Application", argocd.ApplicationGVR()}} {
		list, err := m.Dynamic().Resource(r.gvr).Namespace(argocd.Namespace).List(ctx, sel)
		ts.Check(err)
		for _, o := range list.Items {
			names = append(names, r.kind+" "+o.GetName())
		}
	}
	want(ts, "Argo CD objects", count(ts, args), len(names), fmt.Sprint(names))
}
