package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// generated is a name as a controller's generateName makes it.
func generated(prefix string) *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "-[bcdfghjklmnpqrstvwxz2456789]{5}$")
}

// waitDaemonSet waits until kube-proxy runs one Ready pod of tag on each
// of nodes and nowhere else, its status says so, and the health check
// passes; it returns the pods' UIDs by node.
func waitDaemonSet(t *testing.T, srv *Server, tag string, nodes []string) map[string]types.UID {
	t.Helper()
	cs, uids := srv.Client(), map[string]types.UID{}
	eventually(t, fmt.Sprintf("kube-proxy %s on %v", tag, nodes), func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n, st := int32(len(nodes)), ds.Status
		if got := []int32{st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberReady, st.UpdatedNumberScheduled, st.NumberAvailable, st.NumberUnavailable, st.NumberMisscheduled}; !slices.Equal(got, []int32{n, n, n, n, n, 0, 0}) || st.ObservedGeneration != ds.Generation {
			return false, fmt.Errorf("status %+v at generation %d", st, ds.Generation)
		}
		pods, err := podsOf(ctx, cs, "k8s-app=kube-proxy", ds.UID, "registry.k8s.io/kube-proxy:"+tag)
		if err != nil {
			return false, err
		}
		for node, p := range pods {
			if !generated("kube-proxy").MatchString(p.Name) || p.Labels["tier"] != "node" || p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" {
				return false, fmt.Errorf("pod %s on %s labelled %v", p.Name, node, p.Labels)
			}
			uids[node] = p.UID
		}
		if got := slices.Sorted(maps.Keys(pods)); !slices.Equal(got, slices.Sorted(slices.Values(nodes))) {
			return false, fmt.Errorf("pods on %v", got)
		}
		return true, srv.Check(ctx, "kube-proxy to report ready", nil, nil)
	})
	return uids
}

// waitDeployment waits until CoreDNS runs its two Ready pods of tag,
// through its ReplicaSet of that template, on two nodes but not on those
// avoided, its status says so, and the health check passes; it returns
// the pods' UIDs by node.
func waitDeployment(t *testing.T, srv *Server, tag string, avoided []string) map[string]types.UID {
	t.Helper()
	cs, uids := srv.Client(), map[string]types.UID{}
	eventually(t, "CoreDNS "+tag, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := d.Status
		if got := []int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas}; !slices.Equal(got, []int32{2, 2, 2, 2, 0}) || st.ObservedGeneration != d.Generation {
			return false, fmt.Errorf("status %+v at generation %d", st, d.Generation)
		}
		var conds []string
		for _, c := range st.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		if want := []string{"Available=True/MinimumReplicasAvailable", "Progressing=True/NewReplicaSetAvailable"}; !slices.Equal(conds, want) {
			return false, fmt.Errorf("conditions %v, want %v", conds, want)
		}
		rss, err := cs.AppsV1().ReplicaSets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return false, err
		}
		var cur *appsv1.ReplicaSet
		for i := range rss.Items {
			rs := &rss.Items[i]
			switch {
			case !metav1.IsControlledBy(rs, d):
				return false, fmt.Errorf("ReplicaSet %s not controlled by the Deployment", rs.Name)
			case *rs.Spec.Replicas == 2 && rs.Status.ReadyReplicas == 2 && rs.Name == "coredns-"+rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]:
				cur = rs
			case *rs.Spec.Replicas != 0 || rs.Status.Replicas != 0:
				return false, fmt.Errorf("old ReplicaSet %s at %d replicas", rs.Name, rs.Status.Replicas)
			}
		}
		if cur == nil {
			return false, errors.New("no ReplicaSet of 2 Ready replicas")
		}
		pods, err := podsOf(ctx, cs, "k8s-app=kube-dns", cur.UID, "registry.k8s.io/coredns/coredns:"+tag)
		if err != nil {
			return false, err
		}
		for node, p := range pods {
			if !generated(cur.Name).MatchString(p.Name) || slices.Contains(avoided, node) {
				return false, fmt.Errorf("pod %s on %s", p.Name, node)
			}
			uids[node] = p.UID
		}
		if len(pods) != 2 {
			return false, fmt.Errorf("%d nodes run CoreDNS", len(pods))
		}
		return true, srv.Check(ctx, "coredns to report ready", nil, nil)
	})
	return uids
}

// podsOf returns the kube-system pods of selector by node, each of which
// must be controlled by owner, run image, and be Running and Ready; a node
// runs one at most. Pods being deleted are left out.
func podsOf(ctx context.Context, cs kubernetes.Interface, selector string, owner types.UID, image string) (map[string]*corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		ref := metav1.GetControllerOf(p)
		switch {
		case p.DeletionTimestamp != nil:
			continue
		case ref == nil || ref.UID != owner:
			return nil, fmt.Errorf("pod %s controlled by %v", p.Name, ref)
		case p.Spec.Containers[0].Image != image || p.Status.Phase != corev1.PodRunning || !podReady(p):
			return nil, fmt.Errorf("pod %s: %s %s ready=%s", p.Name, p.Spec.Containers[0].Image, p.Status.Phase, podReadiness(p))
		case out[p.Spec.NodeName] != nil:
			return nil, fmt.Errorf("pods %s and %s on %s", p.Name, out[p.Spec.NodeName].Name, p.Spec.NodeName)
		}
		out[p.Spec.NodeName] = p
	}
	return out, nil
}
