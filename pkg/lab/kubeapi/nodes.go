package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
)

// LabNodeAnnotation marks the Nodes the lab registered (as KWOK's
// kwok.x-k8s.io/node does); the lab's kubelet looks after the pods bound to
// them and leaves every other Node alone.
const LabNodeAnnotation = "lab.talosc.dev/node"

// Defaults for the Node fields a kubelet reports.
const (
	DefaultKubeletVersion = "v1.35.4"
	DefaultOSImage        = "Talos (v1.14.1)"
	defaultKernel         = "6.18.5-talos"
	defaultRuntime        = "containerd://2.1.5"
)

// Node is a node as its kubelet registers it.
type Node struct {
	// Name is the node's name (Talos: its hostname).
	Name string
	// Labels are added to the kubelet's own (kubernetes.io/hostname, os,
	// arch), e.g. node-role.kubernetes.io/control-plane.
	Labels map[string]string
	// Taints are registered with a new node (--register-with-taints); a
	// re-registration keeps the node's taints.
	Taints []corev1.Taint
	// KubeletVersion is status.nodeInfo.kubeletVersion; default v1.35.4.
	KubeletVersion string
	// OSImage is status.nodeInfo.osImage; default "Talos (v1.14.1)".
	OSImage string
	// Ready is the Ready condition.
	Ready bool
	// Addresses are the node's InternalIP addresses; the first is the host
	// IP of its pods.
	Addresses []netip.Addr
}

// RegisterNode creates the Node, or updates its labels and status when it
// exists, as a kubelet does when it starts: status with the Ready
// condition, nodeInfo, addresses, capacity. A not-ready node also gets the
// node.kubernetes.io/not-ready:NoSchedule taint the node lifecycle controller
// would add.
func (s *Server) RegisterNode(ctx context.Context, n Node) error {
	if n.Name == "" {
		return errors.New("kubeapi: register node: empty name")
	}
	if n.KubeletVersion == "" {
		n.KubeletVersion = DefaultKubeletVersion
	}
	if n.OSImage == "" {
		n.OSImage = DefaultOSImage
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	nodes := s.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			cur = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: corev1.NodeSpec{Taints: slices.Clone(n.Taints)}}
			applyMeta(cur, n)
			setReadyTaint(cur, n.Ready)
			if cur, err = nodes.Create(ctx, cur, metav1.CreateOptions{}); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			applyMeta(cur, n)
			setReadyTaint(cur, n.Ready)
			if cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		cur.Status = nodeStatus(n, cur.Status)
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("kubeapi: register node %s: %w", n.Name, err)
	}
	return nil
}

// SetReady sets a lab node's Ready condition (and the not-ready taint), as
// its kubelet and the node lifecycle controller would.
func (s *Server) SetReady(ctx context.Context, name string, ready bool) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	nodes := s.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := cur.Annotations[LabNodeAnnotation]; !ok {
			return fmt.Errorf("%s is not a lab node", name)
		}
		if setReadyTaint(cur, ready) {
			if cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		setCondition(&cur.Status, readyCondition(ready), metav1.Now())
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("kubeapi: set node %s ready=%t: %w", name, ready, err)
	}
	return nil
}

// DeleteNode deletes the Node and force-deletes the pods bound to it (what
// the pod garbage collector does for pods of a node that is gone).
func (s *Server) DeleteNode(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := s.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubeapi: delete node %s: %w", name, err)
	}
	pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("kubeapi: pods of node %s: %w", name, err)
	}
	for i := range pods.Items {
		if err := forceDelete(ctx, s.client, &pods.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// applyMeta sets the kubelet's labels, the caller's labels and the lab's
// annotations.
func applyMeta(node *corev1.Node, n Node) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	maps.Copy(node.Labels, map[string]string{
		"kubernetes.io/hostname":  n.Name,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	})
	maps.Copy(node.Labels, n.Labels)
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[LabNodeAnnotation] = "simulated"
	node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
	node.Annotations["node.alpha.kubernetes.io/ttl"] = "0"
}

// notReadyTaint is the node lifecycle controller's taint for Ready=False.
func notReadyTaint() corev1.Taint {
	return corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
}

// setReadyTaint adds or removes the not-ready taint; it reports a change.
func setReadyTaint(node *corev1.Node, ready bool) bool {
	i := slices.IndexFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	switch {
	case ready && i >= 0:
		node.Spec.Taints = slices.Delete(node.Spec.Taints, i, i+1)
		return true
	case !ready && i < 0:
		t := notReadyTaint()
		now := metav1.Now()
		t.TimeAdded = &now
		node.Spec.Taints = append(node.Spec.Taints, t)
		return true
	default:
		return false
	}
}

func readyCondition(ready bool) corev1.NodeCondition {
	if ready {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	}
	return corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
	}
}

// setCondition replaces the condition of c's type, keeping its transition
// time when the status did not change.
func setCondition(st *corev1.NodeStatus, c corev1.NodeCondition, now metav1.Time) {
	c.LastHeartbeatTime, c.LastTransitionTime = now, now
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		if st.Conditions[i].Status == c.Status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		st.Conditions[i] = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

// nodeStatus is what a kubelet posts for n, on top of the previous status.
func nodeStatus(n Node, prev corev1.NodeStatus) corev1.NodeStatus {
	st := *prev.DeepCopy()
	now := metav1.Now()
	for _, c := range []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		readyCondition(n.Ready),
	} {
		setCondition(&st, c, now)
	}
	st.Addresses = nil
	for _, a := range n.Addresses {
		st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
	}
	st.Addresses = append(st.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
	st.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           resource.MustParse("4026720Ki"),
		corev1.ResourceEphemeralStorage: resource.MustParse("10213312Ki"),
		corev1.ResourcePods:             resource.MustParse("110"),
		"hugepages-2Mi":                 resource.MustParse("0"),
		"hugepages-1Gi":                 resource.MustParse("0"),
	}
	st.Allocatable = st.Capacity.DeepCopy()
	st.Allocatable[corev1.ResourceCPU] = resource.MustParse("1950m")
	st.Allocatable[corev1.ResourceMemory] = resource.MustParse("3502432Ki")
	st.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	info := &st.NodeInfo
	if info.MachineID == "" {
		info.MachineID = strings.ReplaceAll(string(uuid.NewUUID()), "-", "")
		info.SystemUUID = string(uuid.NewUUID())
	}
	info.BootID = string(uuid.NewUUID())
	info.KernelVersion = defaultKernel
	info.OSImage = n.OSImage
	info.ContainerRuntimeVersion = defaultRuntime
	info.KubeletVersion = n.KubeletVersion
	info.OperatingSystem = "linux"
	info.Architecture = "amd64"
	return st
}

// internalIP is the node's first InternalIP, or "".
func internalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
