// Package kubenode is a Kubernetes Node as talosc reads and reports it:
// plain data, so the nodes section's outputs (pkg/phase/sections) carry
// it without linking client-go into the front door, the plugins and the
// small phases. pkg/kube fills it (kube.Node is this type).
package kubenode

import "strings"

// Node is a Kubernetes Node as the nodes phase reads it.
type Node struct {
	Name           string `json:"name"`
	Ready          bool   `json:"ready"`
	KubeletVersion string `json:"kubeletVersion"`
	// OSImage is the node's OS ("Talos (v1.13.8)").
	OSImage string `json:"osImage,omitempty"`
	// InternalIP is the node's first InternalIP address, "" when none.
	InternalIP    string            `json:"internalIP,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	// Taints are the node's taints as kubectl writes them
	// ("key=value:Effect", "key:Effect"), in the Node's order.
	Taints []string `json:"taints,omitempty"`
}

// TalosVersion is the Talos release in OSImage ("Talos (v1.13.8)" →
// "v1.13.8"); "" for another OS.
func (n Node) TalosVersion() string {
	v, ok := strings.CutPrefix(n.OSImage, "Talos (")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(v, ")")
}
