// Package kubeupgrade decides a Kubernetes upgrade, as talosctl upgrade-k8s
// takes it: from the images each node's running configuration gives its
// components and the pinned version, every step (one minor at a time) and
// every change of each, in the order the nodes phase carries them out.
// Rollout turns a step into tasks (its checks, pulls, one apply per
// change and the wait after it, the bootstrap manifests) that the nodes
// phase's executor runs; they reach the cluster only through Cluster,
// which the nodes phase implements (its sessions, its apply of a node's
// configuration, its poll).
package kubeupgrade

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/upgrade"
)

// Component is one Kubernetes component a step upgrades, named as
// Talos names its static pod (and its config resource).
type Component string

// The components of one step, in the order talosctl upgrade-k8s upgrades
// them (day2.md §1.2): the control planes' static pods, one component at
// a time over every control plane, then kube-proxy's image in the control
// planes' configs, then every node's kubelet.
const (
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Proxy             Component = "kube-proxy"
	Kubelet           Component = "kubelet"
)

// Components are the components of a step, in the order it upgrades them.
func Components() []Component {
	return []Component{APIServer, ControllerManager, Scheduler, Proxy, Kubelet}
}

// Image is the component's field of images.
func (c Component) Image(images *machineconfig.KubernetesImages) *string {
	switch c {
	case APIServer:
		return &images.APIServer
	case ControllerManager:
		return &images.ControllerManager
	case Scheduler:
		return &images.Scheduler
	case Proxy:
		return &images.Proxy
	default:
		return &images.Kubelet
	}
}

// StaticPod reports a component Talos runs as a static pod, whose mirror
// pod an upgrade waits for.
func (c Component) StaticPod() bool {
	return c == APIServer || c == ControllerManager || c == Scheduler
}

// On reports whether the component is upgraded on a node of that role:
// the kubelet everywhere, the rest on control planes only (a worker's
// configuration has no control-plane images).
func (c Component) On(controlPlane bool) bool { return controlPlane || c == Kubelet }

// Node is one existing node as a Kubernetes upgrade sees it: its
// address and the images its running configuration gives its components.
type Node struct {
	Machine config.Machine
	Address string
	Images  machineconfig.KubernetesImages
}

// ControlPlane reports a control-plane node.
func (n Node) ControlPlane() bool { return n.Machine.Role == config.RoleControlPlane }

// Change moves one component of one node to its step's version.
type Change struct {
	// Index is the node's index in the upgrade's nodes.
	Index     int
	Component Component
	From      config.Version
	// Image is the component's image at the step's version.
	Image string
}

// Step is one step of an upgrade: its version and its changes in the
// order converge makes them.
type Step struct {
	Version config.Version
	// From is the version the step's path starts at: the lowest running
	// one for the first step, the previous step's after.
	From       config.Version
	Number, Of int
	Changes    []Change
}

// ImageVersion is the version an image's tag names
// ("registry.k8s.io/kube-apiserver:v1.35.4" → v1.35.4; a digest after
// the tag is ignored).
func ImageVersion(ref string) (config.Version, error) {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return config.Version{}, fmt.Errorf("image %q has no version tag", ref)
	}
	return config.ParseVersion(ref[i+1:])
}

// eachComponent calls fn with the running version of every component of
// every node (those upgraded on its role). A component whose image is
// missing, or whose tag is no version, leaves the running version
// unknown: refused (I-13).
func eachComponent(nodes []Node, fn func(n Node, c Component, v config.Version) error) error {
	for _, n := range nodes {
		for _, c := range Components() {
			if !c.On(n.ControlPlane()) {
				continue
			}
			ref := *c.Image(&n.Images)
			v, err := ImageVersion(ref)
			if err != nil {
				return fmt.Errorf("the running %s version of %s is unknown (%w): %w", c, n.Machine.Hostname, err, machineconfig.ErrUnknownRunningKubernetes)
			}
			if err := fn(n, c, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Lowest is the lowest version any node's component runs (as
// talosctl's DetectLowestVersion, over the kubelets too): where an
// upgrade starts.
func Lowest(nodes []Node) (config.Version, error) {
	var lowest config.Version
	found := false
	err := eachComponent(nodes, func(_ Node, _ Component, v config.Version) error {
		if !found || v.Compare(lowest) < 0 {
			lowest, found = v, true
		}
		return nil
	})
	if err == nil && !found {
		err = machineconfig.ErrUnknownRunningKubernetes
	}
	return lowest, err
}

// CheckNoDowngrade refuses a pin older than any component runs (I-12): a
// run killed during an upgrade leaves components above the lowest one.
func CheckNoDowngrade(nodes []Node, target config.Version) error {
	return eachComponent(nodes, func(n Node, c Component, v config.Version) error {
		if v.Compare(target) > 0 {
			return fmt.Errorf("%s runs %s %s: %w", n.Machine.Hostname, c, v, &upgrade.DowngradeError{Key: upgrade.KeyKubernetes, Pinned: target.String(), Running: v.String()})
		}
		return nil
	})
}

// Plan decides every change of an upgrade through steps, starting
// at from: at each step, every component of every node below the step's
// version moves to it, the static pods component by component over the
// control planes, then kube-proxy on them, then the kubelets of the
// control planes and then of the workers. A component already at or above
// a step's version is left alone, so a run killed in the middle of a step
// resumes where it stopped. nodes are control planes first.
func Plan(nodes []Node, from config.Version, steps []config.Version) []Step {
	images := make([]machineconfig.KubernetesImages, len(nodes))
	for i, n := range nodes {
		images[i] = n.Images
	}
	out := make([]Step, len(steps))
	for s, to := range steps {
		out[s] = Step{Version: to, From: from, Number: s + 1, Of: len(steps)}
		from = to
		for _, c := range Components() {
			for i, n := range nodes {
				if !c.On(n.ControlPlane()) {
					continue
				}
				v, err := ImageVersion(*c.Image(&images[i]))
				if err == nil && v.Compare(to) >= 0 {
					continue
				}
				want := machineconfig.DefaultImages(to.String(), n.ControlPlane())
				ch := Change{Index: i, Component: c, From: v, Image: *c.Image(&want)}
				*c.Image(&images[i]) = ch.Image
				out[s].Changes = append(out[s].Changes, ch)
			}
		}
	}
	return out
}

// Order puts control planes first, then workers, each by
// hostname: the plan lists a run of changes of one kind by name, so the
// order converge takes the nodes in is the order the plan shows.
func Order(nodes []Node) {
	slices.SortStableFunc(nodes, func(a, b Node) int {
		if a.ControlPlane() != b.ControlPlane() {
			if a.ControlPlane() {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Machine.Hostname, b.Machine.Hostname)
	})
}

// SameVersion reports that s is version v.
func SameVersion(s string, v config.Version) bool {
	got, err := config.ParseVersion(s)
	return err == nil && got.Compare(v) == 0
}
