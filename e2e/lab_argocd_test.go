package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/rancherapi"
)

// argocdRancherID runs "lab argocd-rancher-id DIR": the cluster Secret of
// the script's cluster is stamped with the id of the lab Rancher's cluster
// of that name, and (within 10 s: Rancher redeploys it after it connects)
// the Rancher agent in the cluster of DIR carries that id too.
func (s *scriptLab) argocdRancherID(ts *testscript.TestScript, args []string) {
	if s.lab.ArgoCD == nil || len(args) != 2 {
		ts.Fatalf("usage: lab argocd-rancher-id DIR (after lab up --argocd)")
	}
	id := ""
	for _, c := range s.lab.Rancher.Clusters() {
		if c.Name == s.cluster {
			id = c.ID
		}
	}
	ctx := context.Background()
	sec, err := s.lab.ArgoCD.Client().CoreV1().Secrets(argocd.Namespace).Get(ctx, "argocd-"+s.cluster+"-secret", metav1.GetOptions{})
	ts.Check(err)
	if got := sec.Annotations["rancher.cattle.io/cluster-id"]; id == "" || got != id {
		ts.Fatalf("the cluster Secret is stamped %q, the lab Rancher's cluster %s is %q", got, s.cluster, id)
	}
	k, err := kube.Load(filepath.Join(ts.MkAbs(args[1]), "kubeconfig"), kube.Options{})
	ts.Check(err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a, err := rancherapi.ReadAgent(ctx, k)
		if err == nil && a.ClusterID == id {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the downstream Rancher agent carries %q (%v), want %q", a.ClusterID, err, id)
		}
	}
}

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
