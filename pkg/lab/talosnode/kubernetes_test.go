package talosnode_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/stdpatches"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// Images the fixture's configurations carry, and the ones tests move to.
const (
	apiServerImage = "registry.k8s.io/kube-apiserver:" + kubeVer
	nextAPIServer  = "registry.k8s.io/kube-apiserver:v1.36.2"
	kubeletImage   = "ghcr.io/siderolabs/kubelet:" + kubeVer
	nextKubelet    = "ghcr.io/siderolabs/kubelet:v1.36.2"
)

// eventLog records the fleet's events (Options.OnEvent).
type eventLog struct {
	mu   sync.Mutex
	list []talosnode.Event
}

func (e *eventLog) on(ev talosnode.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
}

// has reports whether an event of kind for host satisfies ok.
func (e *eventLog) has(kind talosnode.EventKind, host string, ok func(talosnode.NodeStatus) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.list, func(ev talosnode.Event) bool {
		return ev.Kind == kind && ev.Node.Hostname == host && ok(ev.Node)
	})
}

// apiServerAt is cfg with the kube-apiserver image set to image.
func apiServerAt(t *testing.T, cfg []byte, image string) []byte {
	t.Helper()
	p, err := configloader.NewFromBytes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := stdpatches.WithKubeAPIServerImage(stdpatches.GuessVersionContractKubeAPIServer(p), image)
	if err != nil {
		t.Fatal(err)
	}
	return patched(t, cfg, string(patch))
}

// kubeletAt is cfg with the kubelet image set to image.
func kubeletAt(t *testing.T, cfg []byte, image string) []byte {
	t.Helper()
	p, err := configloader.NewFromBytes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := stdpatches.WithKubeletImage(stdpatches.GuessVersionContractKubelet(p), image)
	if err != nil {
		t.Fatal(err)
	}
	return patched(t, cfg, string(patch))
}

// version is a resource's version, "" when it is missing.
func version(t *testing.T, c *client.Client, md resource.Pointer) string {
	t.Helper()
	r, err := c.COSI.Get(ctx(t, 2*time.Second), md)
	if err != nil {
		return ""
	}
	return r.Metadata().Version().String()
}

// configMD is a control-plane config resource.
func configMD(typ resource.Type, id resource.ID) resource.Pointer {
	return resource.NewMetadata(k8s.ControlPlaneNamespaceName, typ, id, resource.VersionUndefined)
}

// staticPodOf is the node's static pod of a component.
func staticPodOf(st talosnode.NodeStatus, component string) (talosnode.StaticPod, bool) {
	i := slices.IndexFunc(st.StaticPods, func(p talosnode.StaticPod) bool { return p.Component == component })
	if i < 0 {
		return talosnode.StaticPod{}, false
	}
	return st.StaticPods[i], true
}

// container0 is the first container of a StaticPod resource's pod.
func container0(t *testing.T, c *client.Client, id string) map[string]any {
	t.Helper()
	sp, err := safe.StateGetByID[*k8s.StaticPod](ctx(t, 2*time.Second), c.COSI, id)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := sp.TypedSpec().Pod["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	if len(containers) == 0 {
		t.Fatalf("static pod %s has no containers: %v", id, sp.TypedSpec().Pod)
	}
	c0, _ := containers[0].(map[string]any)
	return c0
}

// TestControlPlaneResources: a control plane renders its components'
// config resources from its configuration (final- ones on Talos 1.14
// only), and once etcd is healthy their static pods, running and ready,
// annotated with the version of the resource they are rendered from; an
// apply that changes nothing of theirs leaves every version, an image
// patch (as upgrade-k8s makes it) bumps exactly the apiserver's, and the
// lab's Kubernetes hears of both states. A worker has none of it.
func TestControlPlaneResources(t *testing.T) {
	t.Parallel()
	for _, ver := range []string{talos114, talos113} {
		t.Run(ver, func(t *testing.T) {
			t.Parallel()
			final := ver == talos114
			fx := newFixture(t, ver)
			var events eventLog
			l := newLab(t, fx, talosnode.Options{OnEvent: events.on})
			l.bootstrapped()
			n, c := l.nodes[cp(1)], l.client(cp(1))
			eventually(t, "three static pods", func() bool { return len(n.Status().StaticPods) == 3 })

			source := k8s.APIServerConfigID
			if final {
				source = k8s.FinalAPIServerConfigID
			}
			raw, err := safe.StateGetByID[*k8s.APIServerConfig](ctx(t, 2*time.Second), c.COSI, k8s.APIServerConfigID)
			if err != nil || raw.TypedSpec().Image != apiServerImage {
				t.Fatalf("raw kube-apiserver config: %v, %v", raw, err)
			}
			fin, err := safe.StateGetByID[*k8s.APIServerConfig](ctx(t, 2*time.Second), c.COSI, k8s.FinalAPIServerConfigID)
			switch {
			case final && (err != nil || fin.TypedSpec().Image != apiServerImage || fin.TypedSpec().Args[0] != "/usr/local/bin/kube-apiserver"):
				t.Fatalf("final kube-apiserver config on %s: %v, %v", ver, fin, err)
			case !final && !state.IsNotFoundError(err):
				t.Fatalf("final kube-apiserver config on %s: %v, %v; want none", ver, fin, err)
			}
			for _, md := range []resource.Pointer{
				configMD(k8s.ControllerManagerConfigType, k8s.ControllerManagerConfigID),
				configMD(k8s.SchedulerConfigType, k8s.SchedulerConfigID),
			} {
				if version(t, c, md) == "" {
					t.Errorf("%s is missing", md)
				}
			}
			apiMD := configMD(k8s.APIServerConfigType, source)
			v0 := version(t, c, apiMD)
			pod, ok := staticPodOf(n.Status(), k8s.APIServerID)
			if !ok || pod.Image != apiServerImage || pod.ConfigVersion != v0 {
				t.Fatalf("status static pod %+v, want %s at config version %s", pod, apiServerImage, v0)
			}
			if rawV := version(t, c, configMD(k8s.APIServerConfigType, k8s.APIServerConfigID)); final && rawV == v0 {
				t.Errorf("raw and final- versions are both %s: a client comparing the wrong one would pass", v0)
			}
			sp, err := safe.StateGetByID[*k8s.StaticPod](ctx(t, 2*time.Second), c.COSI, k8s.APIServerID)
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := sp.TypedSpec().Pod["metadata"].(map[string]any)
			if ann, _ := meta["annotations"].(map[string]any); ann["talos.dev/config-version"] != v0 {
				t.Errorf("static pod annotations %v, want config-version %s", ann, v0)
			}
			ps, err := safe.StateGetByID[*k8s.StaticPodStatus](ctx(t, 2*time.Second), c.COSI, "kube-system/kube-apiserver-"+cp(1))
			if err != nil || ps.TypedSpec().PodStatus["phase"] != "Running" || !podReady(ps.TypedSpec().PodStatus) {
				t.Fatalf("static pod status: %v, %v", ps, err)
			}
			eventually(t, "an EventConfig with the static pods", func() bool {
				return events.has(talosnode.EventConfig, cp(1), func(st talosnode.NodeStatus) bool { return len(st.StaticPods) == 3 })
			})

			// an apply that changes none of it keeps every version
			versions := func() []string {
				var out []string
				for _, md := range []resource.Pointer{
					configMD(k8s.APIServerConfigType, k8s.APIServerConfigID), apiMD,
					configMD(k8s.SchedulerConfigType, k8s.SchedulerConfigID),
					resource.NewMetadata(k8s.NamespaceName, k8s.StaticPodType, k8s.APIServerID, resource.VersionUndefined),
					resource.NewMetadata(k8s.ControlPlaneNamespaceName, k8s.ManifestType, "10-kube-proxy", resource.VersionUndefined),
				} {
					out = append(out, version(t, c, md))
				}
				return out
			}
			before := versions()
			sysctl := patched(t, fx.configs[cp(1)], sysctlPatch)
			if _, err := apply(t, c, sysctl, machine.ApplyConfigurationRequest_AUTO, false); err != nil {
				t.Fatal(err)
			}
			if after := versions(); !slices.Equal(before, after) {
				t.Errorf("versions after an apply that changes none of them: %v, before %v", after, before)
			}

			// upgrade-k8s's patch: watch, apply, the watched resource is
			// updated once and the static pod follows
			watch := make(chan state.Event, 16)
			if err := c.COSI.Watch(ctx(t, 5*time.Second), apiMD, watch); err != nil {
				t.Fatal(err)
			}
			if ev := <-watch; ev.Type != state.Created || ev.Resource.Metadata().Version().String() != v0 {
				t.Fatalf("first watch event %v %v, want Created at %s", ev.Type, ev.Resource, v0)
			}
			next := apiServerAt(t, patched(t, sysctl, extraArgsPatch(final)), nextAPIServer)
			if _, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, false); err != nil {
				t.Fatal(err)
			}
			ev := <-watch
			v1 := ev.Resource.Metadata().Version().String()
			if ev.Type != state.Updated || ev.Resource.Metadata().Version().Value() != mustUint(t, v0)+1 {
				t.Fatalf("watch event after the patch: %v at %s, want Updated once past %s", ev.Type, v1, v0)
			}
			if pod, _ := staticPodOf(n.Status(), k8s.APIServerID); pod.Image != nextAPIServer || pod.ConfigVersion != v1 {
				t.Errorf("status static pod after the patch %+v, want %s at %s", pod, nextAPIServer, v1)
			}
			c0 := container0(t, c, k8s.APIServerID)
			if cmd, _ := c0["command"].([]any); c0["image"] != nextAPIServer || !slices.Contains(cmd, any("--feature-gates=LabProbe=true")) {
				t.Errorf("static pod container %v, want %s with the extra arg", c0, nextAPIServer)
			}
			if v := version(t, c, configMD(k8s.SchedulerConfigType, k8s.SchedulerConfigID)); v != before[2] {
				t.Errorf("scheduler config version %s after an apiserver patch, want %s", v, before[2])
			}
			if !events.has(talosnode.EventConfig, cp(1), func(st talosnode.NodeStatus) bool {
				p, _ := staticPodOf(st, k8s.APIServerID)
				return p.Image == nextAPIServer && p.ConfigVersion == v1
			}) {
				t.Error("no EventConfig carried the patched static pod")
			}

			w := l.client(worker)
			if list, err := safe.StateListAll[*k8s.APIServerConfig](ctx(t, 2*time.Second), w.COSI); err != nil || list.Len() != 0 {
				t.Errorf("worker's apiserver configs: %v, %v; want none", list, err)
			}
			if pods := l.nodes[worker].Status().StaticPods; len(pods) != 0 {
				t.Errorf("worker's static pods %v, want none", pods)
			}
		})
	}
}

// mustUint parses a resource version.
func mustUint(t *testing.T, v string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// extraArgsPatch gives the kube-apiserver an extra flag (a document of the
// 1.14 layout, or cluster.apiServer on 1.13).
func extraArgsPatch(layout114 bool) string {
	if layout114 {
		return "apiVersion: v1alpha1\nkind: KubeAPIServerConfig\nextraArgs:\n  feature-gates: LabProbe=true\n"
	}
	return "cluster:\n  apiServer:\n    extraArgs:\n      feature-gates: LabProbe=true\n"
}

// podReady reports a pod status's Ready condition.
func podReady(st map[string]any) bool {
	conds, _ := st["conditions"].([]any)
	return slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Ready" && m["status"] == "True"
	})
}

// TestBootstrapManifests: a control plane's Manifest resources carry the
// kube-proxy DaemonSet (with the configuration's proxy image) and the
// CoreDNS Deployment as unstructured objects, as upgrade-k8s syncs them.
func TestBootstrapManifests(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	list, err := safe.StateListAll[*k8s.Manifest](ctx(t, 2*time.Second), l.client(cp(1)).COSI)
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]any{}
	for m := range list.All() {
		for _, item := range m.TypedSpec().Items {
			meta, _ := item.Object["metadata"].(map[string]any)
			objects[fmt.Sprintf("%s %s/%s/%s", m.Metadata().ID(), item.Object["apiVersion"], item.Object["kind"], meta["name"])] = item.Object
		}
	}
	ds, ok := objects["10-kube-proxy apps/v1/DaemonSet/kube-proxy"]
	if !ok {
		t.Fatalf("no kube-proxy DaemonSet among %v", slices.Sorted(maps.Keys(objects)))
	}
	if got := containerImage(ds); got != "registry.k8s.io/kube-proxy:"+kubeVer {
		t.Errorf("kube-proxy image %q", got)
	}
	if meta, _ := ds["metadata"].(map[string]any); meta["namespace"] != "kube-system" {
		t.Errorf("kube-proxy DaemonSet metadata %v", meta)
	}
	if _, has := ds["status"]; has {
		t.Error("a manifest object carries status")
	}
	if dep, ok := objects["11-core-dns apps/v1/Deployment/coredns"]; !ok || containerImage(dep) == "" {
		t.Errorf("CoreDNS Deployment %v among %v", dep, slices.Sorted(maps.Keys(objects)))
	}
}

// containerImage is the first container image of a workload object.
func containerImage(obj map[string]any) string {
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		return ""
	}
	c, _ := containers[0].(map[string]any)
	img, _ := c["image"].(string)
	return img
}

// TestKubeletRestartsOnImageChange: the kubelet Service runs healthy; an
// apply that leaves the KubeletSpec alone keeps it, one that changes its
// image restarts it (Destroyed, then Created running and healthy, as
// upgrade-k8s waits for), after which the node reports the new kubelet
// version and the lab's Kubernetes hears of it.
func TestKubeletRestartsOnImageChange(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	var events eventLog
	l := newLab(t, fx, talosnode.Options{OnEvent: events.on})
	l.boot(cp(1), worker)
	n, c := l.nodes[worker], l.client(worker)
	svc := resource.NewMetadata(v1alpha1.NamespaceName, v1alpha1.ServiceType, "kubelet", resource.VersionUndefined)
	eventually(t, "the kubelet Service", func() bool { return version(t, c, svc) != "" })
	spec, err := safe.StateGetByID[*k8s.KubeletSpec](ctx(t, 2*time.Second), c.COSI, k8s.KubeletID)
	if err != nil || spec.TypedSpec().Image != kubeletImage || !slices.Contains(spec.TypedSpec().Args, "--hostname-override="+worker) {
		t.Fatalf("kubelet spec: %v, %v", spec, err)
	}
	if v := n.Status().KubeletVersion; v != kubeVer {
		t.Fatalf("kubelet version %q, want %s", v, kubeVer)
	}

	watch := make(chan state.Event, 16)
	if err := c.COSI.Watch(ctx(t, 5*time.Second), svc, watch); err != nil {
		t.Fatal(err)
	}
	ev := <-watch
	if s, ok := ev.Resource.(*v1alpha1.Service); ev.Type != state.Created || !ok || !s.TypedSpec().Running || !s.TypedSpec().Healthy {
		t.Fatalf("first kubelet Service event %v %v, want Created running healthy", ev.Type, ev.Resource)
	}
	sv, kv := version(t, c, svc), version(t, c, spec.Metadata())
	sysctl := patched(t, fx.configs[worker], sysctlPatch)
	if _, err := apply(t, c, sysctl, machine.ApplyConfigurationRequest_AUTO, false); err != nil {
		t.Fatal(err)
	}
	if version(t, c, svc) != sv || version(t, c, spec.Metadata()) != kv {
		t.Fatal("an apply that leaves the kubelet alone restarted it")
	}
	if _, err := apply(t, c, kubeletAt(t, sysctl, nextKubelet), machine.ApplyConfigurationRequest_AUTO, false); err != nil {
		t.Fatal(err)
	}
	if ev := <-watch; ev.Type != state.Destroyed {
		t.Fatalf("kubelet Service event after the image patch %v, want Destroyed", ev.Type)
	}
	ev = <-watch
	if s, ok := ev.Resource.(*v1alpha1.Service); ev.Type != state.Created || !ok || !s.TypedSpec().Running || !s.TypedSpec().Healthy {
		t.Fatalf("kubelet Service event after the restart %v %v, want Created running healthy", ev.Type, ev.Resource)
	}
	if v := n.Status().KubeletVersion; v != "v1.36.2" {
		t.Errorf("kubelet version after the restart %q", v)
	}
	if spec, err := safe.StateGetByID[*k8s.KubeletSpec](ctx(t, 2*time.Second), c.COSI, k8s.KubeletID); err != nil || spec.TypedSpec().Image != nextKubelet {
		t.Errorf("kubelet spec after the patch: %v, %v", spec, err)
	}
	eventually(t, "an EventConfig with the new kubelet version", func() bool {
		return events.has(talosnode.EventConfig, worker, func(st talosnode.NodeStatus) bool { return st.KubeletVersion == "v1.36.2" })
	})
}
