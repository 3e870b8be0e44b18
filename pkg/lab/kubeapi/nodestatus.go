package kubeapi

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// readyStatus is the Ready condition a posting kubelet reports.
func readyStatus(ready bool) corev1.ConditionStatus {
	if ready {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// lifecycleTaints are the node lifecycle controller's taints for a Ready
// condition: not-ready for False, unreachable for Unknown (a silent
// kubelet), none for True.
func lifecycleTaints(ready corev1.ConditionStatus) []corev1.Taint {
	var key string
	switch ready {
	case corev1.ConditionFalse:
		key = corev1.TaintNodeNotReady
	case corev1.ConditionUnknown:
		key = corev1.TaintNodeUnreachable
	default:
		return nil
	}
	return []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}, {Key: key, Effect: corev1.TaintEffectNoExecute}}
}

// setLifecycleTaints gives node the lifecycle taints of its Ready
// condition, keeping the time a kept taint was added; it reports a change.
func setLifecycleTaints(node *corev1.Node, ready corev1.ConditionStatus) bool {
	lifecycle := func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	}
	var kept []corev1.Taint
	for _, t := range node.Spec.Taints {
		if !lifecycle(t) {
			kept = append(kept, t)
		}
	}
	now := metav1.Now()
	for _, t := range lifecycleTaints(ready) {
		if i := slices.IndexFunc(node.Spec.Taints, func(c corev1.Taint) bool { return c.MatchTaint(&t) }); i >= 0 {
			t.TimeAdded = node.Spec.Taints[i].TimeAdded
		} else {
			t.TimeAdded = &now
		}
		kept = append(kept, t)
	}
	changed := !slices.EqualFunc(kept, node.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) })
	node.Spec.Taints = kept
	return changed
}

// conditions are the node conditions a kubelet posts, with the Ready one
// of ready; Unknown is what the lifecycle controller sets on every
// condition of a kubelet that stopped posting.
func conditions(ready corev1.ConditionStatus) []corev1.NodeCondition {
	if ready == corev1.ConditionUnknown {
		var out []corev1.NodeCondition
		for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
			out = append(out, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."})
		}
		return out
	}
	out := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
	}
	if ready == corev1.ConditionTrue {
		return append(out, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"})
	}
	return append(out, corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
	})
}

// setConditions replaces the conditions of st with those of ready, keeping
// a condition's transition time when its status did not change (and its
// heartbeat when the kubelet is silent).
func setConditions(st *corev1.NodeStatus, ready corev1.ConditionStatus, now metav1.Time) {
	for _, c := range conditions(ready) {
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		i := slices.IndexFunc(st.Conditions, func(p corev1.NodeCondition) bool { return p.Type == c.Type })
		if i < 0 {
			st.Conditions = append(st.Conditions, c)
			continue
		}
		if st.Conditions[i].Status == c.Status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		if ready == corev1.ConditionUnknown {
			c.LastHeartbeatTime = st.Conditions[i].LastHeartbeatTime
		}
		st.Conditions[i] = c
	}
}

// nodeStatus is what a kubelet posts for n, on top of the previous status;
// boot (a kubelet start after a reboot) makes a new boot ID.
func nodeStatus(n Node, prev corev1.NodeStatus, boot bool) corev1.NodeStatus {
	st := *prev.DeepCopy()
	setConditions(&st, readyStatus(n.Ready), metav1.Now())
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
	if boot || info.BootID == "" {
		info.BootID = string(uuid.NewUUID())
	}
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
