package kubeupgrade

import (
	"testing"

	"github.com/talosc/talosc/pkg/kube"
)

// A mirror pod runs the step once it has the step's image, at least the
// configuration version the apply produced (≥: talos#14258), and is Ready.
func TestStaticPodWaiting(t *testing.T) {
	t.Parallel()
	to := version(t, "v1.35.4")
	const image = "registry.k8s.io/kube-apiserver:v1.35.4"
	for _, tc := range []struct {
		name    string
		pod     kube.StaticPod
		waiting bool
	}{
		{"runs the step", kube.StaticPod{Image: image, ConfigVersion: "3", Ready: true}, false},
		{"a later configuration", kube.StaticPod{Image: image, ConfigVersion: "4", Ready: true}, false},
		{"the old image", kube.StaticPod{Image: "registry.k8s.io/kube-apiserver:v1.34.3", ConfigVersion: "3", Ready: true}, true},
		{"an older configuration", kube.StaticPod{Image: image, ConfigVersion: "2", Ready: true}, true},
		{"no configuration version", kube.StaticPod{Image: image, Ready: true}, true},
		{"not Ready", kube.StaticPod{Image: image, ConfigVersion: "3"}, true},
	} {
		if got := StaticPodWaiting(tc.pod, to, 3); (got != "") != tc.waiting {
			t.Errorf("%s: waiting for %q, want waiting %t", tc.name, got, tc.waiting)
		}
	}
}

// Namespaces and CRDs are applied first, then ConfigMaps and Secrets,
// then the rest, as Talos stages them.
func TestManifestStage(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]int{"Namespace": 0, "CustomResourceDefinition": 0, "ConfigMap": 1, "Secret": 1, "DaemonSet": 2} {
		if got := ManifestStage(map[string]any{"kind": kind}); got != want {
			t.Errorf("%s: stage %d, want %d", kind, got, want)
		}
	}
}
