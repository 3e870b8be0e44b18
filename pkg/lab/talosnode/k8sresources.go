package talosnode

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// component is a control-plane component as its static pod is rendered:
// from the final- config resource on Talos ≥ 1.14, the raw one before.
type component struct {
	id      string
	image   string
	command []string
	enabled bool
	// version is the rendered-from resource's version.
	version string
}

// syncKubernetes publishes the Kubernetes side of a running node, rendered
// from its active configuration as machined's controllers render it: the
// KubeletSpec; on a control plane the components' config resources, their
// static pods and pod statuses once etcd is healthy, and the bootstrap
// manifests. All of it is gone while the node is down and rendered anew
// at every boot (machined's state lives in memory), so versions start
// over. It returns the static pods the kubelet runs.
func (n *Node) syncKubernetes(ctx context.Context, v resourceView) []StaticPod {
	mc := v.config
	up := mc != nil && v.osUp
	cp := up && mc.controlPlane()
	var kubelet []*k8s.KubeletSpec
	if up {
		r := k8s.NewKubeletSpec(k8s.NamespaceName, k8s.KubeletID)
		*r.TypedSpec() = renderKubelet(mc, v.hostname, v.addr)
		kubelet = append(kubelet, r)
	}
	syncKind(ctx, n.st, k8s.NamespaceName, k8s.KubeletSpecType, kubelet)

	final := atLeast114(v.image.Version)
	components := []component{
		syncComponent(ctx, n.st, k8s.APIServerConfigType, cp, final,
			func(f bool) *k8s.APIServerConfig { return apiServerConfig(mc, f) },
			func(r *k8s.APIServerConfig) component {
				return component{id: k8s.APIServerID, image: r.TypedSpec().Image, command: r.TypedSpec().Args, enabled: true}
			}),
		syncComponent(ctx, n.st, k8s.ControllerManagerConfigType, cp, final,
			func(f bool) *k8s.ControllerManagerConfig { return controllerManagerConfig(mc, f) },
			func(r *k8s.ControllerManagerConfig) component {
				s := r.TypedSpec()
				return component{id: k8s.ControllerManagerID, image: s.Image, command: s.Args, enabled: s.Enabled}
			}),
		syncComponent(ctx, n.st, k8s.SchedulerConfigType, cp, final,
			func(f bool) *k8s.SchedulerConfig { return schedulerConfig(mc, f) },
			func(r *k8s.SchedulerConfig) component {
				s := r.TypedSpec()
				return component{id: k8s.SchedulerID, image: s.Image, command: s.Args, enabled: s.Enabled}
			}),
	}

	var pods []StaticPod
	var specs []*k8s.StaticPod
	var statuses []*k8s.StaticPodStatus
	if cp && v.servicesUp && v.etcdHealthy {
		for _, c := range components {
			if !c.enabled {
				continue
			}
			specs = append(specs, staticPod(c))
			statuses = append(statuses, staticPodStatus(c, v.hostname))
			pods = append(pods, StaticPod{Component: c.id, Image: c.image, ConfigVersion: c.version})
		}
	}
	syncKind(ctx, n.st, k8s.NamespaceName, k8s.StaticPodType, specs)
	syncKind(ctx, n.st, k8s.NamespaceName, k8s.StaticPodStatusType, statuses)
	var manifests []*k8s.Manifest
	if cp {
		manifests = bootstrapManifests(mc)
	}
	syncKind(ctx, n.st, k8s.ControlPlaneNamespaceName, k8s.ManifestType, manifests)
	return pods
}

// syncComponent publishes one component's config resources (present: on a
// running control plane): the raw one and, on Talos ≥ 1.14 (final), its
// final- one; it returns the component as its static pod is rendered.
//
// The two counters are independent on Talos: the lab makes the raw one
// run one ahead from every boot, so only the version of the resource the
// static pod is rendered from matches the pod's config-version
// (siderolabs/talos#14258).
func syncComponent[T resource.Resource](ctx context.Context, st state.State, typ resource.Type, present, final bool,
	build func(final bool) T, describe func(T) component,
) component {
	var want []T
	if present {
		want = append(want, build(false))
		if final {
			want = append(want, build(true))
		}
	}
	syncKind(ctx, st, k8s.ControlPlaneNamespaceName, typ, want)
	if !present {
		return component{}
	}
	if raw := want[0]; final && raw.Metadata().Version().Value() == 1 {
		_ = st.Update(ctx, raw)
	}
	c := describe(build(true))
	c.version = want[len(want)-1].Metadata().Version().String()
	return c
}

// controlPlaneLabels are the labels of a component's static pod.
func controlPlaneLabels(c component) map[string]string {
	return map[string]string{
		"tier":                         "control-plane",
		"k8s-app":                      c.id,
		"component":                    c.id,
		"app.kubernetes.io/name":       c.id,
		"app.kubernetes.io/version":    strings.TrimPrefix(imageTag(c.image), "v"),
		"app.kubernetes.io/component":  "control-plane",
		"app.kubernetes.io/managed-by": "Talos",
	}
}

// staticPod is a component's StaticPod resource: the pod the kubelet
// runs, annotated with the config version it was rendered from.
func staticPod(c component) *k8s.StaticPod {
	pod := corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.id, Namespace: "kube-system", Labels: controlPlaneLabels(c),
			Annotations: map[string]string{
				constants.AnnotationStaticPodConfigVersion:  c.version,
				constants.AnnotationStaticPodSecretsVersion: "1",
			},
		},
		Spec: corev1.PodSpec{
			Containers:        []corev1.Container{{Name: c.id, Image: c.image, Command: c.command}},
			HostNetwork:       true,
			PriorityClassName: "system-cluster-critical",
		},
	}
	r := k8s.NewStaticPod(k8s.NamespaceName, c.id)
	r.TypedSpec().Pod = unstructuredJSON(pod)
	return r
}

// staticPodStatus is the kubelet's report of a component's static pod:
// running and ready.
func staticPodStatus(c component, hostname string) *k8s.StaticPodStatus {
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: c.id, Image: c.image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}},
	}
	r := k8s.NewStaticPodStatus(k8s.NamespaceName, "kube-system/"+c.id+"-"+hostname)
	r.TypedSpec().PodStatus = unstructuredJSON(st)
	return r
}

// unstructuredJSON is v as a JSON object, the way machined stores pods and
// pod statuses in resources.
func unstructuredJSON(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // Kubernetes API types always marshal
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}
