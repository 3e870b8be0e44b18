package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Node is a node as its kubelet registers it and Talos labels it.
type Node struct {
	// Name is the node's name (Talos: its hostname).
	Name string
	// Labels are the labels Talos applies from the machine configuration
	// (machine.nodeLabels, plus node-role.kubernetes.io/control-plane on a
	// control plane), on top of the kubelet's own (kubernetes.io/hostname,
	// os, arch). Talos owns what it applied (annotation
	// talos.dev/owned-labels): a label that leaves the configuration leaves
	// the Node, and a label someone else set to another value stays theirs.
	Labels map[string]string
	// Taints are the taints Talos applies from the configuration
	// (machine.nodeTaints, plus NoSchedule on a control plane), owned the
	// same way (talos.dev/owned-taints).
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

// RegisterNode is the node's kubelet starting (a boot): it creates the
// Node, or updates it when it exists, with Talos's labels and taints and
// the status a kubelet posts (conditions, nodeInfo with a new boot ID,
// addresses, capacity). A not-ready node also gets the
// node.kubernetes.io/not-ready taint the node lifecycle controller would
// add.
func (s *Server) RegisterNode(ctx context.Context, n Node) error {
	return s.syncNode(ctx, n, true)
}

// UpdateNode is a configuration applied to a running node without a
// reboot: the Node's labels, taints and addresses follow n, and so does
// its kubelet version (the kubelet restarts with the configured image);
// the boot ID stays. A Node not there yet is registered.
func (s *Server) UpdateNode(ctx context.Context, n Node) error {
	return s.syncNode(ctx, n, false)
}

// syncNode creates or updates the Node of n; boot gives it a new boot ID.
func (s *Server) syncNode(ctx context.Context, n Node, boot bool) error {
	if n.Name == "" {
		return errors.New("kubeapi: node without a name")
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
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cur = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
		case err != nil:
			return err
		}
		applyMeta(cur, n)
		applyTaints(cur, n.Taints)
		setLifecycleTaints(cur, readyStatus(n.Ready))
		if create {
			cur, err = nodes.Create(ctx, cur, metav1.CreateOptions{})
			// the NodeTaint admission plugin taints a new Node not-ready:
			// the lifecycle controller lifts that once the Node is Ready
			if err == nil && setLifecycleTaints(cur, readyStatus(n.Ready)) {
				cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
			}
		} else {
			cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
		cur.Status = nodeStatus(n, cur.Status, boot)
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("kubeapi: node %s: %w", n.Name, err)
	}
	return nil
}

// SetReady marks a lab node's kubelet back (ready) or gone (not ready:
// the machine is down, reset or deleted). A gone kubelet posts nothing, so
// the Node shows what the node lifecycle controller makes of silence:
// every condition Unknown ("Kubelet stopped posting node status.") and the
// node.kubernetes.io/unreachable taints; back, it is Ready and untainted.
func (s *Server) SetReady(ctx context.Context, name string, ready bool) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	nodes := s.client.CoreV1().Nodes()
	st := corev1.ConditionUnknown
	if ready {
		st = corev1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := cur.Annotations[LabNodeAnnotation]; !ok {
			return fmt.Errorf("%s is not a lab node", name)
		}
		if setLifecycleTaints(cur, st) {
			if cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		setConditions(&cur.Status, st, metav1.Now())
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("kubeapi: set node %s ready=%t: %w", name, ready, err)
	}
	return nil
}

// applyMeta sets the kubelet's labels, Talos's labels and the lab's
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
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[LabNodeAnnotation] = "simulated"
	node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
	node.Annotations["node.alpha.kubernetes.io/ttl"] = "0"
	applyLabels(node, n.Labels)
}
