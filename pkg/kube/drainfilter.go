package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The refusals of kubectl drain without --force (k8s.io/kubectl
// pkg/drain/filters.go), worded for talosc, which has no --force: the way
// out is the reference's (give the pod a controller, or delete it, and
// re-run).
const (
	unmanagedRefusal    = "Pods that declare no controller (give them a controller or delete them, then re-run)"
	orphanedDSRefusal   = "DaemonSet-managed Pods whose DaemonSet is gone"
	daemonSetAPIVersion = "apps/v1"
)

// daemonSetCheck says whether the DaemonSet namespace/name exists; found is
// false with a nil error only when the API said NotFound.
type daemonSetCheck func(namespace, name string) (found bool, err error)

// podsToEvict is kubectl drain's pod filter with --ignore-daemonsets
// --delete-emptydir-data and without --force: pods of a live DaemonSet and
// mirror (static) pods stay; pods with emptyDir volumes go (their data is
// deleted with them); pods that declare no controller, and pods of a
// DaemonSet that is gone, refuse the whole drain, naming them. Finished
// pods (Succeeded, Failed) always go. A DaemonSet that cannot be looked up
// refuses too: unknown is never safe to evict around. The order of the
// checks is kubectl's (a finished mirror pod stays too).
func podsToEvict(pods []corev1.Pod, dsExists daemonSetCheck) ([]corev1.Pod, error) {
	var (
		evict   []corev1.Pod
		refused drainRefusals
	)
	for i := range pods {
		p := &pods[i]
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		ref := metav1.GetControllerOf(p)
		switch {
		case !finished && ref != nil && ref.Kind == "DaemonSet" && ref.APIVersion == daemonSetAPIVersion:
			found, err := dsExists(p.Namespace, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", podName(p), err)
			}
			if !found {
				refused.add(orphanedDSRefusal, p)
			}
		case hasAnnotation(p, corev1.MirrorPodAnnotationKey):
		case !finished && ref == nil:
			refused.add(unmanagedRefusal, p)
		default:
			evict = append(evict, *p)
		}
	}
	if err := refused.err(); err != nil {
		return nil, err
	}
	return evict, nil
}

// drainRefusals are the pods that refuse a drain, by reason, the reasons
// in the order first met.
type drainRefusals struct {
	pods  map[string][]string
	order []string
}

// add refuses pod p for why.
func (r *drainRefusals) add(why string, p *corev1.Pod) {
	if r.pods == nil {
		r.pods = map[string][]string{}
	}
	if _, ok := r.pods[why]; !ok {
		r.order = append(r.order, why)
	}
	r.pods[why] = append(r.pods[why], podName(p))
}

// err names every refused pod by reason; nil when none refused.
func (r *drainRefusals) err() error {
	if len(r.order) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(r.order))
	for _, why := range r.order {
		msgs = append(msgs, fmt.Sprintf("cannot delete %s: %s", why, strings.Join(r.pods[why], ", ")))
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

func hasAnnotation(p *corev1.Pod, key string) bool {
	_, ok := p.Annotations[key]
	return ok
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
