package machineconfig_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// imageAt is where each layout keeps each component's image: the
// v1alpha1 document up to Talos 1.13, the typed documents from 1.14.
func imageAt(t *testing.T, docs []map[string]any, talos string) machineconfig.KubernetesImages {
	t.Helper()
	if talos == talos113 {
		v1 := legacyDoc(t, docs)
		s := func(path ...string) string { v, _ := dig(v1, path...).(string); return v }
		return machineconfig.KubernetesImages{
			APIServer:         s("cluster", "apiServer", "image"),
			ControllerManager: s("cluster", "controllerManager", "image"),
			Scheduler:         s("cluster", "scheduler", "image"),
			Proxy:             s("cluster", "proxy", "image"),
			Kubelet:           s("machine", "kubelet", "image"),
		}
	}
	one := func(kind string) string {
		ds := docsOf(docs, kind)
		if len(ds) > 1 {
			t.Fatalf("%d %s documents, want at most 1", len(ds), kind)
		}
		if len(ds) == 0 {
			return ""
		}
		v, _ := ds[0]["image"].(string)
		return v
	}
	return machineconfig.KubernetesImages{
		APIServer:         one("KubeAPIServerConfig"),
		ControllerManager: one("KubeControllerManagerConfig"),
		Scheduler:         one("KubeSchedulerConfig"),
		Proxy:             one("KubeProxyConfig"),
		Kubelet:           one("KubeletConfig"),
	}
}

// TestGenerate_Images: each component gets exactly the image asked for,
// in the layout of the node's contract; the others keep the default of
// the node's Kubernetes version; RunningImages reads them back.
func TestGenerate_Images(t *testing.T) {
	t.Parallel()
	const running = "v1.35.4"
	for _, talos := range []string{talos113, talos114} {
		for _, tc := range []struct {
			name   string
			host   string
			images machineconfig.KubernetesImages
			want   machineconfig.KubernetesImages
		}{
			{
				"a control plane mid-upgrade: the apiserver stepped, the rest not yet", "demo-controlplane-01",
				machineconfig.KubernetesImages{APIServer: "registry.k8s.io/kube-apiserver:v1.36.1"},
				machineconfig.KubernetesImages{
					APIServer:         "registry.k8s.io/kube-apiserver:v1.36.1",
					ControllerManager: "registry.k8s.io/kube-controller-manager:" + running,
					Scheduler:         "registry.k8s.io/kube-scheduler:" + running,
					Proxy:             "registry.k8s.io/kube-proxy:" + running,
					Kubelet:           "ghcr.io/siderolabs/kubelet:" + running,
				},
			},
			{
				"a control plane, every component its own", "demo-controlplane-02",
				machineconfig.KubernetesImages{
					APIServer:         "mirror.example.edu:5000/k8s/kube-apiserver:v1.36.1",
					ControllerManager: "mirror.example.edu:5000/k8s/kube-controller-manager:v1.36.0",
					Scheduler:         "registry.k8s.io/kube-scheduler:v1.35.9",
					Proxy:             "registry.k8s.io/kube-proxy:v1.35.8",
					Kubelet:           "ghcr.io/siderolabs/kubelet:v1.35.7",
				},
				machineconfig.KubernetesImages{
					APIServer:         "mirror.example.edu:5000/k8s/kube-apiserver:v1.36.1",
					ControllerManager: "mirror.example.edu:5000/k8s/kube-controller-manager:v1.36.0",
					Scheduler:         "registry.k8s.io/kube-scheduler:v1.35.9",
					Proxy:             "registry.k8s.io/kube-proxy:v1.35.8",
					Kubelet:           "ghcr.io/siderolabs/kubelet:v1.35.7",
				},
			},
			{
				"a worker's kubelet", "demo-gpu-01",
				machineconfig.KubernetesImages{Kubelet: "ghcr.io/siderolabs/kubelet:v1.36.1"},
				machineconfig.KubernetesImages{Kubelet: "ghcr.io/siderolabs/kubelet:v1.36.1"},
			},
			{"a worker at its defaults", "demo-gpu-02", machineconfig.KubernetesImages{}, machineconfig.KubernetesImages{Kubelet: "ghcr.io/siderolabs/kubelet:" + running}},
		} {
			t.Run(talos+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				in := openstackInput(t, openstackYAML)
				n := node(t, in.Cluster, tc.host, talos)
				n.KubernetesVersion, n.Images = running, tc.images
				c := mustGenerate(t, in, n)
				if d := cmp.Diff(tc.want, imageAt(t, documents(t, c.Bytes()), talos)); d != "" {
					t.Errorf("images in the config (-want +got):\n%s", d)
				}
				got, err := machineconfig.RunningImages(c.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("RunningImages (-want +got):\n%s", d)
				}
			})
		}
	}
}

// TestDefaultImages_MatchGenerate: a node generated with DefaultImages(v)
// is byte for byte the node generated at v, and RunningImages of a
// default config is DefaultImages.
func TestDefaultImages_MatchGenerate(t *testing.T) {
	t.Parallel()
	for _, talos := range []string{talos113, talos114} {
		for _, host := range []string{"demo-controlplane-01", "demo-gpu-01"} {
			t.Run(talos+"/"+host, func(t *testing.T) {
				t.Parallel()
				in := openstackInput(t, openstackYAML)
				n := node(t, in.Cluster, host, talos)
				plain := mustGenerate(t, in, n).Bytes()
				defaults := machineconfig.DefaultImages(n.KubernetesVersion, strings.Contains(host, "controlplane"))
				n.Images = defaults
				if with := mustGenerate(t, in, n).Bytes(); !bytes.Equal(plain, with) {
					t.Errorf("the config with DefaultImages differs from the default config")
				}
				got, err := machineconfig.RunningImages(plain)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(defaults, got); d != "" {
					t.Errorf("RunningImages of the default config (-DefaultImages +got):\n%s", d)
				}
			})
		}
	}
	if got := machineconfig.DefaultImages("1.36.1", false); got != (machineconfig.KubernetesImages{Kubelet: "ghcr.io/siderolabs/kubelet:v1.36.1"}) {
		t.Errorf("DefaultImages(1.36.1, worker) = %+v", got)
	}
}

func TestGenerate_RefusesControlPlaneImagesOnAWorker(t *testing.T) {
	t.Parallel()
	in := openstackInput(t, openstackYAML)
	n := node(t, in.Cluster, "demo-gpu-01", talos114)
	n.Images.Proxy = "registry.k8s.io/kube-proxy:v1.36.1"
	_, err := machineconfig.Generate(in, n)
	if err == nil || !strings.Contains(err.Error(), "demo-gpu-01") || !strings.Contains(err.Error(), "a worker runs no kube-proxy") {
		t.Fatalf("Generate = %v, want a refusal naming the node and kube-proxy", err)
	}
}

func TestRunningImages_RefusesWhatIsNoConfig(t *testing.T) {
	t.Parallel()
	if _, err := machineconfig.RunningImages([]byte("machine: [")); err == nil {
		t.Error("RunningImages accepted a config that does not parse")
	}
}

func TestKubernetesImages_Tags(t *testing.T) {
	t.Parallel()
	got := machineconfig.KubernetesImages{
		APIServer:         "mirror.example.edu:5000/k8s/kube-apiserver:v1.36.1",
		ControllerManager: "registry.k8s.io/kube-controller-manager:v1.36.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Scheduler:         "mirror.example.edu:5000/kube-scheduler",
		Kubelet:           "ghcr.io/siderolabs/kubelet:v1.35.4-fat",
	}.Tags()
	want := map[string]string{
		machineconfig.ComponentAPIServer:         "v1.36.1",
		machineconfig.ComponentControllerManager: "v1.36.0",
		machineconfig.ComponentScheduler:         "",
		machineconfig.ComponentKubelet:           "v1.35.4-fat",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Tags (-want +got):\n%s", d)
	}
}

// TestReturnPathPodFollowsTheRunningKubeProxy is I-R12 mid-upgrade: the
// pod keeps kube-proxy's running tag, not the node's target version.
func TestReturnPathPodFollowsTheRunningKubeProxy(t *testing.T) {
	t.Parallel()
	for _, talos := range []string{talos113, talos114} {
		t.Run(talos, func(t *testing.T) {
			t.Parallel()
			in := proxmoxInput(t, proxmoxYAML)
			n := node(t, in.Cluster, "lab-controlplane-01", talos)
			n.KubernetesVersion = "v1.36.1"
			n.Images.Proxy = "mirror.example.edu/kube-proxy:v1.35.4"
			b := string(mustGenerate(t, in, n).Bytes())
			if !strings.Contains(b, "image: registry.k8s.io/kube-proxy:v1.35.4\n") || strings.Contains(b, "registry.k8s.io/kube-proxy:v1.36.1") {
				t.Errorf("return-path pod does not follow kube-proxy's running v1.35.4:\n%s", b)
			}
			n.Images.Proxy = "mirror.example.edu/kube-proxy"
			if _, err := machineconfig.Generate(in, n); err == nil || !strings.Contains(err.Error(), "kube-proxy version") {
				t.Errorf("a kube-proxy image without a tag: %v, want a refusal", err)
			}
		})
	}
}
