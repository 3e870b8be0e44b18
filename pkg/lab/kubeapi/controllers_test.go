package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ctrlVIP is the API address of TestControllers, whose kube-system
// workloads put pods on every node: the other tests' nodes are on another
// apiserver.
const ctrlVIP = "127.40.0.3"

// Bootstrap manifests as pkg/lab/talosnode renders them and talosctl
// upgrade-k8s syncs them (server-side apply, field manager "talos",
// forced); the images are placeholders.
const (
	kubeProxyManifest = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy","namespace":"kube-system","labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"selector":{"matchLabels":{"k8s-app":"kube-proxy","tier":"node"}},"updateStrategy":{"type":"RollingUpdate"},"template":{"metadata":{"labels":{"k8s-app":"kube-proxy","tier":"node"}},
"spec":{"hostNetwork":true,"priorityClassName":"system-cluster-critical","serviceAccountName":"kube-proxy",
"tolerations":[{"operator":"Exists","effect":"NoSchedule"},{"operator":"Exists","effect":"NoExecute"}],
"containers":[{"name":"kube-proxy","image":"registry.k8s.io/kube-proxy:@PROXY@","command":["/usr/local/bin/kube-proxy","--proxy-mode=iptables"],
"env":[{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]}]}}}}`
	corednsManifest = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"coredns","namespace":"kube-system","labels":{"k8s-app":"kube-dns","kubernetes.io/name":"CoreDNS"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"k8s-app":"kube-dns"}},"template":{"metadata":{"labels":{"k8s-app":"kube-dns"}},
"spec":{"dnsPolicy":"Default","priorityClassName":"system-cluster-critical","serviceAccountName":"coredns",
"tolerations":[{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}],
"containers":[{"name":"coredns","image":"registry.k8s.io/coredns/coredns:@DNS@","args":["-conf","/etc/coredns/Corefile"],
"volumeMounts":[{"name":"config-volume","mountPath":"/etc/coredns","readOnly":true}]}],
"volumes":[{"name":"config-volume","configMap":{"name":"coredns","items":[{"key":"Corefile","path":"Corefile"}]}}]}}}}`
)

// TestControllers: the kube-proxy DaemonSet and the CoreDNS Deployment, as
// Talos's manifest sync applies them, get Running, Ready pods and the
// status Talos's health check and kubectl read; an image change replaces
// the pods; the pods follow the Nodes (a new node, a cordon and an
// eviction, a node not ready, a deleted Node); a DaemonSet elsewhere is
// left alone.
func TestControllers(t *testing.T) {
	t.Parallel()
	needHelper(t)
	ca, caKey := testCA(t)
	srv, err := Start(t.Context(), Options{
		Address: ctrlVIP + ":0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: t.TempDir(),
		PodTerminationDelay: 100 * time.Millisecond, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cs := t.Context(), srv.Client()
	register := func(name string, i byte, ready bool) {
		t.Helper()
		n := Node{Name: name, Ready: ready, Addresses: []netip.Addr{netip.AddrFrom4([4]byte{127, 40, 6, i})}}
		if strings.HasPrefix(name, "cp-") {
			n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
			n.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}
		if err := srv.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	register("cp-1", 1, true)
	register("w-1", 2, true)
	register("w-2", 3, true)
	nodes := []string{"cp-1", "w-1", "w-2"}

	for _, cond := range []string{"kube-proxy to report ready", "coredns to report ready"} {
		if err := srv.Check(ctx, cond, nil, nil); !errors.Is(err, ErrSkip) {
			t.Errorf("%s without its workload: %v, want SKIP", cond, err)
		}
	}
	createNamespace(t, cs, "elsewhere")
	tmpl := podTemplate(kindDaemonSet, "elsewhere")
	if _, err := cs.AppsV1().DaemonSets("elsewhere").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Selector: selector("elsewhere"), Template: tmpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	applyBootstrap(t, cs, "v1.36.1", "v1.12.4")
	proxy := waitDaemonSet(t, srv, "v1.36.1", nodes)
	dns := waitDeployment(t, srv, "v1.12.4", nil)

	// an image change replaces every pod
	applyBootstrap(t, cs, "v1.36.2", "v1.12.5")
	for node, uid := range waitDaemonSet(t, srv, "v1.36.2", nodes) {
		if proxy[node] == uid {
			t.Errorf("the kube-proxy pod on %s was not replaced", node)
		}
	}
	dns2 := waitDeployment(t, srv, "v1.12.5", nil)
	for node, uid := range dns2 {
		if slices.Contains(slices.Collect(maps.Values(dns)), uid) {
			t.Errorf("the CoreDNS pod on %s was not replaced", node)
		}
	}

	// a new node gets its kube-proxy pod, Ready once the node is
	register("w-3", 4, false)
	nodes = append(nodes, "w-3")
	eventually(t, "kube-proxy desired on w-3", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		return err == nil && ds.Status.DesiredNumberScheduled == 4, err
	})
	// Talos counts a pod with no container statuses (Pending, its kubelet
	// not there yet) as completed, not as not ready
	if err := srv.Check(ctx, "kube-proxy to report ready", nil, nil); err == nil || err.Error() != "expected 4 ready pods, got 3" {
		t.Errorf("kube-proxy with a pod on a node not ready: %v, want 4 expected", err)
	}
	if name := podName(t, cs, "k8s-app=kube-proxy", "w-3"); !generated("kube-proxy").MatchString(name) {
		t.Errorf("kube-proxy pod %s on w-3", name)
	}
	if err := srv.SetReady(ctx, "w-3", true); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, srv, "v1.36.2", nodes)

	// a cordoned node keeps its kube-proxy pod; an evicted CoreDNS pod
	// comes back elsewhere
	cordoned := slices.Sorted(maps.Keys(dns2))[0]
	cordon(t, cs, cordoned, true)
	if err := cs.CoreV1().Pods(metav1.NamespaceSystem).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: podName(t, cs, "k8s-app=kube-dns", cordoned), Namespace: metav1.NamespaceSystem}}); err != nil {
		t.Fatal(err)
	}
	dns3 := waitDeployment(t, srv, "v1.12.5", []string{cordoned})
	waitDaemonSet(t, srv, "v1.36.2", nodes)
	cordon(t, cs, cordoned, false)

	// a deleted Node's pods go with it; its CoreDNS pod comes back elsewhere
	deleted := slices.Sorted(maps.Keys(dns3))[0]
	if err := cs.CoreV1().Nodes().Delete(ctx, deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, srv, "v1.36.2", slices.DeleteFunc(nodes, func(n string) bool { return n == deleted }))
	waitDeployment(t, srv, "v1.12.5", []string{deleted})
	eventually(t, "no pods on the deleted node", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + deleted})
		return err == nil && len(pods.Items) == 0, err
	})

	pods, err := cs.CoreV1().Pods("elsewhere").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("the DaemonSet outside kube-system got pods: %d (%v)", len(pods.Items), err)
	}
}

// applyBootstrap server-side applies the kube-proxy DaemonSet and the
// CoreDNS Deployment at those image tags, as Talos's manifest sync does.
func applyBootstrap(t *testing.T, cs kubernetes.Interface, proxy, dns string) {
	t.Helper()
	force := true
	opts := metav1.PatchOptions{FieldManager: "talos", Force: &force}
	apps := cs.AppsV1()
	ds, err := apps.DaemonSets(metav1.NamespaceSystem).Patch(t.Context(), "kube-proxy", types.ApplyPatchType, []byte(strings.Replace(kubeProxyManifest, "@PROXY@", proxy, 1)), opts)
	if err != nil {
		t.Fatalf("apply the kube-proxy DaemonSet: %v", err)
	}
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != "registry.k8s.io/kube-proxy:"+proxy {
		t.Errorf("kube-proxy image %s after applying %s", got, proxy)
	}
	if _, err := apps.Deployments(metav1.NamespaceSystem).Patch(t.Context(), "coredns", types.ApplyPatchType, []byte(strings.Replace(corednsManifest, "@DNS@", dns, 1)), opts); err != nil {
		t.Fatalf("apply the CoreDNS Deployment: %v", err)
	}
}

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

// podName is the name of the kube-system pod of selector on node (pods
// being deleted left out).
func podName(t *testing.T, cs kubernetes.Interface, selector, node string) string {
	t.Helper()
	list, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if len(list.Items) != 1 {
		t.Fatalf("%d pods of %s on %s", len(list.Items), selector, node)
	}
	return list.Items[0].Name
}

// cordon cordons node or uncordons it.
func cordon(t *testing.T, cs kubernetes.Interface, node string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := cs.CoreV1().Nodes().Patch(t.Context(), node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
