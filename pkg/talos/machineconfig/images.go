package machineconfig

import (
	"fmt"
	"strings"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/stdpatches"
	"github.com/siderolabs/talos/pkg/machinery/config/types/k8s"
	"github.com/siderolabs/talos/pkg/machinery/config/types/v1alpha1"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// The Kubernetes components a machine config names an image for, by the
// names their images, static pods and k8s-app labels use.
const (
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
	ComponentProxy             = "kube-proxy"
	ComponentKubelet           = "kubelet"
)

// KubernetesImages are the full image references of a node's Kubernetes
// components. A Kubernetes upgrade moves them one component and one node
// at a time (talosctl upgrade-k8s patches exactly these), so a config
// generated mid-upgrade must carry each one as it runs, not one version
// for all. "" means the default for the node's KubernetesVersion; only
// Kubelet applies to a worker (the others run on control planes).
type KubernetesImages struct {
	APIServer, ControllerManager, Scheduler, Proxy, Kubelet string
}

// component is one Kubernetes component's image: its field, the
// repository generate defaults to, machinery's patch and layout guess,
// and where a config of either layout keeps it.
type component struct {
	name         string
	controlPlane bool
	repository   string
	field        func(*KubernetesImages) *string
	patch        func(*talosconfig.VersionContract, string) ([]byte, error)
	guess        func(talosconfig.Container) *talosconfig.VersionContract
	kind         string                        // the typed document (Talos ≥ 1.14)
	legacy       func(*v1alpha1.Config) string // the v1alpha1 field (Talos ≤ 1.13)
}

// components lists them in upgrade-k8s order.
func components() []component {
	return []component{
		{
			ComponentAPIServer, true, constants.KubernetesAPIServerImage,
			func(k *KubernetesImages) *string { return &k.APIServer },
			stdpatches.WithKubeAPIServerImage, stdpatches.GuessVersionContractKubeAPIServer, k8s.KubeAPIServerConfig,
			func(c *v1alpha1.Config) string {
				if c.ClusterConfig == nil || c.ClusterConfig.APIServerConfig == nil { //nolint:staticcheck // reading a ≤1.13 config
					return ""
				}
				return c.ClusterConfig.APIServerConfig.ContainerImage //nolint:staticcheck // reading a ≤1.13 config
			},
		},
		{
			ComponentControllerManager, true, constants.KubernetesControllerManagerImage,
			func(k *KubernetesImages) *string { return &k.ControllerManager },
			stdpatches.WithKubeControllerManagerImage, stdpatches.GuessVersionContractKubeControllerManager, k8s.KubeControllerManagerConfig,
			func(c *v1alpha1.Config) string {
				if c.ClusterConfig == nil || c.ClusterConfig.ControllerManagerConfig == nil { //nolint:staticcheck // reading a ≤1.13 config
					return ""
				}
				return c.ClusterConfig.ControllerManagerConfig.ContainerImage //nolint:staticcheck // reading a ≤1.13 config
			},
		},
		{
			ComponentScheduler, true, constants.KubernetesSchedulerImage,
			func(k *KubernetesImages) *string { return &k.Scheduler },
			stdpatches.WithKubeSchedulerImage, stdpatches.GuessVersionContractKubeScheduler, k8s.KubeSchedulerConfig,
			func(c *v1alpha1.Config) string {
				if c.ClusterConfig == nil || c.ClusterConfig.SchedulerConfig == nil { //nolint:staticcheck // reading a ≤1.13 config
					return ""
				}
				return c.ClusterConfig.SchedulerConfig.ContainerImage //nolint:staticcheck // reading a ≤1.13 config
			},
		},
		{
			ComponentProxy, true, constants.KubeProxyImage,
			func(k *KubernetesImages) *string { return &k.Proxy },
			stdpatches.WithKubeProxyImage, stdpatches.GuessVersionContractKubeProxy, k8s.KubeProxyConfig,
			func(c *v1alpha1.Config) string {
				if c.ClusterConfig == nil || c.ClusterConfig.ProxyConfig == nil { //nolint:staticcheck // reading a ≤1.13 config
					return ""
				}
				return c.ClusterConfig.ProxyConfig.ContainerImage //nolint:staticcheck // reading a ≤1.13 config
			},
		},
		{
			ComponentKubelet, false, constants.KubeletImage,
			func(k *KubernetesImages) *string { return &k.Kubelet },
			stdpatches.WithKubeletImage, stdpatches.GuessVersionContractKubelet, k8s.KubeletConfig,
			func(c *v1alpha1.Config) string {
				if c.MachineConfig == nil || c.MachineConfig.MachineKubelet == nil { //nolint:staticcheck // reading a ≤1.13 config
					return ""
				}
				return c.MachineConfig.MachineKubelet.KubeletImage //nolint:staticcheck // reading a ≤1.13 config
			},
		},
	}
}

// DefaultImages are the images machinery's generate writes for
// kubernetesVersion (with or without the leading "v"): every component
// on a control plane, the kubelet alone on a worker. A node generated
// with them equals one generated without Images.
func DefaultImages(kubernetesVersion string, controlPlane bool) KubernetesImages {
	var out KubernetesImages
	tag := "v" + strings.TrimPrefix(kubernetesVersion, "v")
	for _, c := range components() {
		if controlPlane || !c.controlPlane {
			*c.field(&out) = c.repository + ":" + tag
		}
	}
	return out
}

// RunningImages reads the Kubernetes images a node's machine config (as
// the node returns it) sets, in either layout. A component the config
// does not name is "": the node then runs its Talos release's default,
// which the caller must not guess.
func RunningImages(config []byte) (KubernetesImages, error) {
	cfg, err := configloader.NewFromBytes(config)
	if err != nil {
		return KubernetesImages{}, fmt.Errorf("running machine config: %w", err)
	}
	var out KubernetesImages
	for _, c := range components() {
		*c.field(&out) = setImage(cfg, c)
	}
	return out, nil
}

// setImage is the image c's typed document sets, else its v1alpha1 field
// (never machinery's accessor, which falls back to its own default).
func setImage(cfg talosconfig.Provider, c component) string {
	for _, doc := range cfg.Documents() {
		if img, ok := doc.(interface{ Image() string }); ok && doc.Kind() == c.kind {
			return img.Image()
		}
	}
	if raw := cfg.RawV1Alpha1(); raw != nil {
		return c.legacy(raw)
	}
	return ""
}

// Tags maps each component with an image to that image's tag ("v1.35.4";
// a kubelet may carry a -fat or -slim suffix): what a plan shows and an
// upgrade compares.
func (k KubernetesImages) Tags() map[string]string {
	out := map[string]string{}
	for _, c := range components() {
		if ref := *c.field(&k); ref != "" {
			out[c.name] = imageTag(ref)
		}
	}
	return out
}

// imageTag is the tag of an image reference, "" without one.
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	name := ref[strings.LastIndexByte(ref, '/')+1:]
	_, tag, _ := strings.Cut(name, ":")
	return tag
}

// apply sets the images k names on a generated config, in the layout the
// config has (machinery's stdpatches, as upgrade-k8s patches a node). A
// worker takes only a kubelet image.
func (k KubernetesImages) apply(base talosconfig.Provider, controlPlane bool) (talosconfig.Provider, error) {
	var patches []configpatcher.Patch
	for _, c := range components() {
		ref := *c.field(&k)
		if ref == "" {
			continue
		}
		if c.controlPlane && !controlPlane {
			return nil, fmt.Errorf("a worker runs no %s: its config takes only a kubelet image, not %s", c.name, ref)
		}
		p, err := stdpatches.PreparePatch(c.patch(c.guess(base), ref))
		if err != nil {
			return nil, fmt.Errorf("%s image %s: %w", c.name, ref, err)
		}
		patches = append(patches, p)
	}
	if len(patches) == 0 {
		return base, nil
	}
	out, err := configpatcher.Apply(configpatcher.WithConfig(base), patches)
	if err != nil {
		return nil, fmt.Errorf("kubernetes images: %w", err)
	}
	return out.Config()
}
