package kubeapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// The kubelet's annotations of a static pod and its mirror pod
// (k8s.io/kubernetes pkg/kubelet/types).
const (
	annotationConfigHash   = "kubernetes.io/config.hash"
	annotationConfigSeen   = "kubernetes.io/config.seen"
	annotationConfigSource = "kubernetes.io/config.source"
)

// StaticPod is a control-plane static pod (kube-apiserver,
// kube-controller-manager, kube-scheduler) as Talos renders it on a control
// plane and its kubelet runs it.
type StaticPod struct {
	// Component names the pod and its one container: "kube-apiserver".
	Component string
	// Image is the container's image, from the machine configuration.
	Image string
	// ConfigVersion is the version of the Talos resource the pod was
	// rendered from (annotation talos.dev/config-version), which
	// talosctl upgrade-k8s waits for.
	ConfigVersion string
}

// SyncMirrorPods makes the mirror pods of the lab node's static pods
// exactly pods, as its kubelet does: a mirror pod, named
// <component>-<node> in kube-system, carries the static pod's labels and
// annotations (talos.dev/config-version, kubernetes.io/config.mirror = its
// hash), a controller reference to its Node and spec.nodeName; one whose
// static pod changed (image or config version) is deleted at once and
// created again, one whose static pod is gone is deleted. The lab's
// kubelet then reports them Running and Ready with the node's address as
// host and pod IP (host network). A Node not registered yet is NotFound.
func (s *Server) SyncMirrorPods(ctx context.Context, node string, pods []StaticPod) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	api := s.client.CoreV1().Pods(metav1.NamespaceSystem)
	have, err := api.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return fmt.Errorf("kubeapi: mirror pods of %s: %w", node, err)
	}
	want := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		want[p.Component+"-"+node] = staticPod(p, node)
	}
	for _, cur := range have.Items {
		hash, mirror := cur.Annotations[corev1.MirrorPodAnnotationKey]
		if !mirror {
			continue
		}
		if w, ok := want[cur.Name]; ok && w.Annotations[annotationConfigHash] == hash {
			delete(want, cur.Name) // up to date
			continue
		}
		if err := forceDelete(ctx, s.client, &cur); err != nil {
			return err
		}
	}
	if len(want) == 0 {
		return nil
	}
	n, err := s.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kubeapi: mirror pods of %s: %w", node, err)
	}
	controller := true
	for _, p := range want {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID, Controller: &controller}}
		if _, err := api.Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubeapi: mirror pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// staticPod is the mirror pod of p on node, as Talos's templates label and
// annotate the static pod and the kubelet adds its own annotations (the
// hash stands for the whole static pod: it changes with the image and the
// config version).
func staticPod(p StaticPod, node string) *corev1.Pod {
	sum := sha256.Sum256([]byte(strings.Join([]string{p.Component, p.Image, p.ConfigVersion}, "\x00")))
	hash := hex.EncodeToString(sum[:16])
	labels := map[string]string{
		"tier":                         "control-plane",
		"k8s-app":                      p.Component,
		"component":                    p.Component,
		"app.kubernetes.io/name":       p.Component,
		"app.kubernetes.io/component":  "control-plane",
		"app.kubernetes.io/managed-by": "Talos",
	}
	if v, err := version.ParseSemantic(ImageTag(p.Image)); err == nil {
		labels["app.kubernetes.io/version"] = v.String()
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Component + "-" + node, Namespace: metav1.NamespaceSystem, Labels: labels,
			Annotations: map[string]string{
				constants.AnnotationStaticPodConfigVersion: p.ConfigVersion,
				annotationConfigHash:                       hash,
				corev1.MirrorPodAnnotationKey:              hash,
				annotationConfigSeen:                       time.Now().UTC().Format(time.RFC3339Nano),
				annotationConfigSource:                     "file",
			},
		},
		Spec: corev1.PodSpec{
			NodeName:          node,
			HostNetwork:       true,
			PriorityClassName: "system-cluster-critical",
			Containers:        []corev1.Container{{Name: p.Component, Image: p.Image, Command: []string{"/usr/local/bin/" + p.Component}}},
		},
	}
}

// ImageTag is the tag of an image reference ("v1.36.1"), or "" without
// one (a digest is not a tag).
func ImageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}
