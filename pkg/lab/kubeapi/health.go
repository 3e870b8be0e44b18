package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrSkip is a health condition that does not apply to the cluster
// (Talos's conditions.ErrSkipAssertion, shown as SKIP).
var ErrSkip = errors.New("SKIP")

// controlPlaneComponents are the control plane's static pods, by k8s-app.
func controlPlaneComponents() []string {
	return []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"}
}

// Check evaluates one Kubernetes condition of Talos's server-side health
// check (talos pkg/cluster/check, v1.14.1) for the control planes and
// workers the check expects, by their addresses, with Talos's error
// messages: nil once it holds, ErrSkip when it does not apply. Talos asks
// the API through the cluster endpoint; the lab asks the apiserver
// directly (unrecorded, no faults). "all control plane static pods to be
// running" is asked of the kubelets' mirror pods here (Talos reads its
// StaticPodStatus resources, which the kubelet reports from the same
// pods). Not simulated: the SKIP of "all k8s nodes to report ready" and
// "coredns to report ready" under cluster.network.cni "none".
func (s *Server) Check(ctx context.Context, condition string, controlPlanes, workers []netip.Addr) error {
	cs := s.client
	switch condition {
	case "all k8s nodes to report":
		return nodesMatch(ctx, cs, slices.Concat(controlPlanes, workers), "")
	case "all control plane static pods to be running":
		return staticPodsRunning(ctx, cs, controlPlanes)
	case "all control plane components to be ready":
		return controlPlaneReady(ctx, cs, controlPlanes)
	case "all k8s nodes to report ready":
		return nodesReady(ctx, cs)
	case "kube-proxy to report ready":
		dss, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-proxy"})
		if err != nil {
			return err
		}
		// Talos skips only when there is no DaemonSet (DaemonSetPresent);
		// one its controller has not counted yet has no ready pod, and the
		// condition waits.
		if len(dss.Items) == 0 {
			return ErrSkip
		}
		return podsReady(ctx, cs, int(dss.Items[0].Status.DesiredNumberScheduled), "k8s-app=kube-proxy")
	case "coredns to report ready":
		deps, err := cs.AppsV1().Deployments(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return err
		}
		if len(deps.Items) == 0 {
			return ErrSkip
		}
		replicas := 0
		if r := deps.Items[0].Spec.Replicas; r != nil {
			replicas = int(*r)
		}
		return podsReady(ctx, cs, replicas, "k8s-app=kube-dns")
	case "all k8s nodes to report schedulable":
		return nodesSchedulable(ctx, cs)
	default:
		return fmt.Errorf("kubeapi: unknown health condition %q", condition)
	}
}

// nodeIPs are a Node's InternalIP and ExternalIP addresses.
func nodeIPs(n *corev1.Node) ([]netip.Addr, error) {
	var ips []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			return nil, err
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// nodesMatch asserts the Nodes (those carrying label, when given) are
// exactly the expected addresses, as Talos's cluster.NodesMatch does.
func nodesMatch(ctx context.Context, cs kubernetes.Interface, expected []netip.Addr, label string) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var actual [][]netip.Addr
	for i := range nodes.Items {
		if _, ok := nodes.Items[i].Labels[label]; label != "" && !ok {
			continue
		}
		ips, err := nodeIPs(&nodes.Items[i])
		if err != nil {
			return err
		}
		actual = append(actual, ips)
	}
	for _, want := range expected {
		i := slices.IndexFunc(actual, func(ips []netip.Addr) bool { return slices.Contains(ips, want) })
		if i < 0 {
			return fmt.Errorf("can't find expected node with IPs %q", []netip.Addr{want})
		}
		actual = slices.Delete(actual, i, i+1)
	}
	if len(actual) > 0 {
		unexpected := slices.Concat(actual...)
		slices.SortFunc(unexpected, netip.Addr.Compare)
		return fmt.Errorf("unexpected nodes with IPs %q", unexpected)
	}
	return nil
}

// staticPodsRunning asserts every control plane runs the control plane's
// static pods: its Node has a mirror pod of each.
func staticPodsRunning(ctx context.Context, cs kubernetes.Interface, controlPlanes []netip.Addr) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, cp := range controlPlanes {
		missing := map[string]bool{}
		for _, c := range controlPlaneComponents() {
			missing["kube-system/"+c] = true
		}
		for i := range nodes.Items {
			if ips, _ := nodeIPs(&nodes.Items[i]); !slices.Contains(ips, cp) {
				continue
			}
			pods, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodes.Items[i].Name})
			if err != nil {
				return fmt.Errorf("error listing static pods on node %s: %w", cp, err)
			}
			for _, p := range pods.Items {
				if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
					delete(missing, "kube-system/"+p.Labels["k8s-app"])
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing static pods on node %s: %v", cp, slices.Sorted(maps.Keys(missing)))
		}
	}
	return nil
}

// controlPlaneReady asserts the control plane Nodes are exactly the
// control planes, each running one Ready pod of every component.
func controlPlaneReady(ctx context.Context, cs kubernetes.Interface, controlPlanes []netip.Addr) error {
	if err := nodesMatch(ctx, cs, controlPlanes, constants.LabelNodeRoleControlPlane); err != nil {
		return err
	}
	for _, app := range controlPlaneComponents() {
		pods, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app = " + app})
		if err != nil {
			return fmt.Errorf("error listing pods for app %s: %w", app, err)
		}
		if len(pods.Items) != len(controlPlanes) {
			return fmt.Errorf("expected number of pods for %s to be %d, got %d", app, len(controlPlanes), len(pods.Items))
		}
		var notReady []string
		for i := range pods.Items {
			// as Talos: a pod without a Ready condition yet is not counted
			if ready := podReadiness(&pods.Items[i]); ready != "" && ready != corev1.ConditionTrue {
				notReady = append(notReady, pods.Items[i].Name)
			}
		}
		if len(notReady) > 0 {
			return fmt.Errorf("some pods are not ready for %s: %v", app, notReady)
		}
	}
	return nil
}

// podReadiness is the status of a pod's Ready condition, "" when it has
// none.
func podReadiness(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// nodesReady asserts every Node is Ready.
func nodesReady(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var notReady []string
	for i := range nodes.Items {
		for _, c := range nodes.Items[i].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				notReady = append(notReady, nodes.Items[i].Name)
			}
		}
	}
	if len(notReady) > 0 {
		return fmt.Errorf("some nodes are not ready: %v", notReady)
	}
	return nil
}

// nodesSchedulable asserts no Node is cordoned (Talos names the first it
// finds only).
func nodesSchedulable(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			return fmt.Errorf("some nodes are not schedulable: %v", []string{n.Name})
		}
	}
	return nil
}

// podsReady asserts the kube-system pods of selector are Ready and as many
// as replicas (deleted, failed and completed pods left out).
func podsReady(ctx context.Context, cs kubernetes.Interface, replicas int, selector string) error {
	pods, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pods found for namespace %q and label selector %q", metav1.NamespaceSystem, selector)
	}
	var ready, notReady []string
	for i := range pods.Items {
		p := &pods.Items[i]
		completed := !slices.ContainsFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.State.Terminated == nil })
		switch {
		case p.DeletionTimestamp != nil, p.Status.Phase == corev1.PodFailed, completed:
		case podReady(p):
			ready = append(ready, p.Name)
		default:
			notReady = append(notReady, p.Name)
		}
	}
	switch {
	case len(ready) == 0:
		return fmt.Errorf("no ready pods found for namespace %q and label selector %q", metav1.NamespaceSystem, selector)
	case len(notReady) > 0:
		return fmt.Errorf("some pods are not ready: %v", notReady)
	case len(ready) != replicas:
		return fmt.Errorf("expected %d ready pods, got %d", replicas, len(ready))
	}
	return nil
}
