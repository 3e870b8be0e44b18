package kube

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsToEvict_KubectlDrainFilter(t *testing.T) {
	t.Parallel()
	yes := true
	owned := func(apiVersion, kind, name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes}}
		}
	}
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	mirror := func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
	pod := func(name string, opts ...func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, o := range opts {
			o(&p)
		}
		return p
	}
	dsLookupFails := errors.New("kube get daemonset ns/broken: timed out after 10s")
	dsExists := func(_, name string) (bool, error) {
		switch name {
		case "agent":
			return true, nil
		case "broken":
			return false, dsLookupFails
		}
		return false, nil
	}
	tests := []struct {
		name    string
		pods    []corev1.Pod
		evict   []string
		wantErr string
	}{
		{name: "controller pods go, emptyDir or not", pods: []corev1.Pod{
			pod("web", owned("apps/v1", "ReplicaSet", "web")),
			pod("db", owned("apps/v1", "StatefulSet", "db"), func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}),
		}, evict: []string{"web", "db"}},
		{name: "a live DaemonSet's pods and mirror pods stay", pods: []corev1.Pod{
			pod("agent-1", owned("apps/v1", "DaemonSet", "agent")),
			pod("kube-apiserver-cp-1", owned("v1", "Node", "cp-1"), mirror),
			pod("static-finished", mirror, phase(corev1.PodSucceeded)),
			pod("web", owned("apps/v1", "ReplicaSet", "web")),
		}, evict: []string{"web"}},
		{name: "finished pods go whoever owns them", pods: []corev1.Pod{
			pod("job", phase(corev1.PodSucceeded)),
			pod("crashed", phase(corev1.PodFailed), owned("apps/v1", "DaemonSet", "gone")),
		}, evict: []string{"job", "crashed"}},
		{name: "another group's DaemonSet kind is just a controller", pods: []corev1.Pod{
			pod("x", owned("example.com/v1", "DaemonSet", "gone")),
		}, evict: []string{"x"}},
		{name: "unmanaged and orphaned pods refuse the drain, each kind once, names in order", pods: []corev1.Pod{
			pod("debug"), pod("web", owned("apps/v1", "ReplicaSet", "web")),
			pod("agent-old", owned("apps/v1", "DaemonSet", "gone")), pod("shell", phase(corev1.PodPending)),
			pod("owned-not-controller", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web"}}
			}),
		}, wantErr: "cannot delete Pods that declare no controller (give them a controller or delete them, then re-run): ns/debug, ns/shell, ns/owned-not-controller; " +
			"cannot delete DaemonSet-managed Pods whose DaemonSet is gone: ns/agent-old"},
		{name: "a DaemonSet that cannot be looked up refuses", pods: []corev1.Pod{
			pod("agent-2", owned("apps/v1", "DaemonSet", "broken")),
		}, wantErr: "pod ns/agent-2: " + dsLookupFails.Error()},
		{name: "no pods, nothing to do", pods: nil, evict: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := podsToEvict(tt.pods, dsExists)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("a refused drain evicts %d pod(s)", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.evict) {
				t.Errorf("evict %v, want %v", names, tt.evict)
			}
		})
	}
}

func TestDrainProgress_String(t *testing.T) {
	t.Parallel()
	p := DrainProgress{Node: "worker-01", Waiting: []PodWait{
		{Pod: "default/web-x", Reason: WaitDisruptionBudget, Detail: "The disruption budget web needs 2 healthy pods and has 2 currently"},
		{Pod: "default/web-y", Reason: WaitTerminating},
	}}
	if got, want := p.String(), "waiting for 2 pod(s) on worker-01: default/web-x (PodDisruptionBudget), default/web-y (terminating)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
