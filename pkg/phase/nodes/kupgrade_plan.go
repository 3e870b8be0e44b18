package nodes

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/upgrade"
)

// kubeComponent is one Kubernetes component a step upgrades, named as
// Talos names its static pod (and its config resource).
type kubeComponent string

// The components of one step, in the order talosctl upgrade-k8s upgrades
// them (day2.md §1.2): the control planes' static pods, one component at
// a time over every control plane, then kube-proxy's image in the control
// planes' configs, then every node's kubelet.
const (
	compAPIServer         kubeComponent = "kube-apiserver"
	compControllerManager kubeComponent = "kube-controller-manager"
	compScheduler         kubeComponent = "kube-scheduler"
	compProxy             kubeComponent = "kube-proxy"
	compKubelet           kubeComponent = "kubelet"
)

func kubeComponents() []kubeComponent {
	return []kubeComponent{compAPIServer, compControllerManager, compScheduler, compProxy, compKubelet}
}

// image is the component's field of images.
func (c kubeComponent) image(images *machineconfig.KubernetesImages) *string {
	switch c {
	case compAPIServer:
		return &images.APIServer
	case compControllerManager:
		return &images.ControllerManager
	case compScheduler:
		return &images.Scheduler
	case compProxy:
		return &images.Proxy
	default:
		return &images.Kubelet
	}
}

// kind is the plan kind of the component's changes.
func (c kubeComponent) kind() string {
	switch c {
	case compAPIServer:
		return KindKubeAPIServer
	case compControllerManager:
		return KindKubeControllerManager
	case compScheduler:
		return KindKubeScheduler
	case compProxy:
		return KindKubeProxy
	default:
		return KindKubelet
	}
}

// staticPod reports a component Talos runs as a static pod, whose mirror
// pod an upgrade waits for.
func (c kubeComponent) staticPod() bool {
	return c == compAPIServer || c == compControllerManager || c == compScheduler
}

// on reports whether the component is upgraded on a node of that role:
// the kubelet everywhere, the rest on control planes only (a worker's
// configuration has no control-plane images).
func (c kubeComponent) on(controlPlane bool) bool { return controlPlane || c == compKubelet }

// kubeNode is one existing node as a Kubernetes upgrade sees it: its
// address and the images its running configuration gives its components.
type kubeNode struct {
	machine config.Machine
	address string
	images  machineconfig.KubernetesImages
}

func (n kubeNode) controlPlane() bool { return n.machine.Role == config.RoleControlPlane }

// kubeChange moves one component of one node to its step's version.
type kubeChange struct {
	node      int // index in the upgrade's nodes
	component kubeComponent
	from      config.Version
	// image is the component's image at the step's version.
	image string
}

// kubeStep is one step of an upgrade: its version and its changes in the
// order converge makes them.
type kubeStep struct {
	version config.Version
	// from is the version the step's path starts at: the lowest running
	// one for the first step, the previous step's after.
	from       config.Version
	number, of int
	changes    []kubeChange
}

// imageVersion is the version an image's tag names
// ("registry.k8s.io/kube-apiserver:v1.35.4" → v1.35.4; a digest after
// the tag is ignored).
func imageVersion(ref string) (config.Version, error) {
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
func eachComponent(nodes []kubeNode, fn func(n kubeNode, c kubeComponent, v config.Version) error) error {
	for _, n := range nodes {
		for _, c := range kubeComponents() {
			if !c.on(n.controlPlane()) {
				continue
			}
			ref := *c.image(&n.images)
			v, err := imageVersion(ref)
			if err != nil {
				return fmt.Errorf("the running %s version of %s is unknown (%w): %w", c, n.machine.Hostname, err, machineconfig.ErrUnknownRunningKubernetes)
			}
			if err := fn(n, c, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowestKubernetes is the lowest version any node's component runs (as
// talosctl's DetectLowestVersion, over the kubelets too): where an
// upgrade starts.
func lowestKubernetes(nodes []kubeNode) (config.Version, error) {
	var lowest config.Version
	found := false
	err := eachComponent(nodes, func(_ kubeNode, _ kubeComponent, v config.Version) error {
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

// checkNoDowngrade refuses a pin older than any component runs (I-12): a
// run killed during an upgrade leaves components above the lowest one.
func checkNoDowngrade(nodes []kubeNode, target config.Version) error {
	return eachComponent(nodes, func(n kubeNode, c kubeComponent, v config.Version) error {
		if v.Compare(target) > 0 {
			return fmt.Errorf("%s runs %s %s: %w", n.machine.Hostname, c, v, &upgrade.DowngradeError{Key: upgrade.KeyKubernetes, Pinned: target.String(), Running: v.String()})
		}
		return nil
	})
}

// planKubeSteps decides every change of an upgrade through steps, starting
// at from: at each step, every component of every node below the step's
// version moves to it, the static pods component by component over the
// control planes, then kube-proxy on them, then the kubelets of the
// control planes and then of the workers. A component already at or above
// a step's version is left alone, so a run killed in the middle of a step
// resumes where it stopped. nodes are control planes first.
func planKubeSteps(nodes []kubeNode, from config.Version, steps []config.Version) []kubeStep {
	images := make([]machineconfig.KubernetesImages, len(nodes))
	for i, n := range nodes {
		images[i] = n.images
	}
	out := make([]kubeStep, len(steps))
	for s, to := range steps {
		out[s] = kubeStep{version: to, from: from, number: s + 1, of: len(steps)}
		from = to
		for _, c := range kubeComponents() {
			for i, n := range nodes {
				if !c.on(n.controlPlane()) {
					continue
				}
				v, err := imageVersion(*c.image(&images[i]))
				if err == nil && v.Compare(to) >= 0 {
					continue
				}
				want := machineconfig.DefaultImages(to.String(), n.controlPlane())
				ch := kubeChange{node: i, component: c, from: v, image: *c.image(&want)}
				*c.image(&images[i]) = ch.image
				out[s].changes = append(out[s].changes, ch)
			}
		}
	}
	return out
}

// orderKubeNodes puts control planes first, then workers, each by
// hostname: the plan lists a run of changes of one kind by name, so the
// order converge takes the nodes in is the order the plan shows.
func orderKubeNodes(nodes []kubeNode) {
	slices.SortStableFunc(nodes, func(a, b kubeNode) int {
		if a.controlPlane() != b.controlPlane() {
			if a.controlPlane() {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.machine.Hostname, b.machine.Hostname)
	})
}

// record is the change's plan entry. A kubelet's name carries the node's
// role, so that the control planes' kubelets, upgraded first, are listed
// first.
func (st kubeStep) record(nodes []kubeNode, ch kubeChange) state.Change {
	n := nodes[ch.node]
	name := n.machine.Hostname
	if ch.component == compKubelet {
		name = n.machine.Role + "/" + name
	}
	return state.Change{
		Action: state.ActionUpdate, Kind: ch.component.kind(), Name: name,
		Detail: fmt.Sprintf("%s -> %s (step %d of %d)", ch.from, st.version, st.number, st.of),
		// Each component's new image restarts its pod (a static pod, the
		// kubelet itself).
		Node: n.machine.Hostname, Disruption: state.DisruptionServiceRestart,
	}
}

// sameVersion reports that s is version v.
func sameVersion(s string, v config.Version) bool {
	got, err := config.ParseVersion(s)
	return err == nil && got.Compare(v) == 0
}
