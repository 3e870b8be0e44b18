package kubeupgrade

import (
	"context"
	"fmt"
	"time"

	cosi "github.com/cosi-project/runtime/pkg/state"
	"k8s.io/client-go/rest"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/ui"
)

// Talos is what an upgrade asks of the Talos session through the first
// control plane (the nodes phase's session satisfies it).
type Talos interface {
	PullImage(ctx context.Context, node, ref string, system bool) error
	ConfigVersion(ctx context.Context, node, component string) (uint64, error)
	Manifests(ctx context.Context, node string) ([]map[string]any, error)
	// COSI is the session's resource state (go-kubernetes' upgrade checks
	// read each node's through it).
	COSI() cosi.State
}

// Kube is what an upgrade asks of Kubernetes (the nodes phase's client
// satisfies it).
type Kube interface {
	ServerVersion(ctx context.Context) (string, error)
	Nodes(ctx context.Context) ([]kube.Node, error)
	StaticPods(ctx context.Context, component string) ([]kube.StaticPod, error)
	Apply(ctx context.Context, obj map[string]any, fieldManager string) error
	// RESTConfig is the client's configuration (go-kubernetes' upgrade
	// checks list removed API resources with it).
	RESTConfig() *rest.Config
}

// Cluster is the nodes phase as an upgrade works through it: its
// sessions, the apply of a node's configuration, and its wait.
type Cluster interface {
	// Talos is the Talos session and the first control plane's address it
	// goes through.
	Talos(ctx context.Context) (Talos, string, error)
	// Kube is the Kubernetes client.
	Kube() (Kube, error)
	// Apply applies n's whole configuration, generated at images, and
	// waits for the node when the apply restarts it.
	Apply(ctx context.Context, n Node, images machineconfig.KubernetesImages) error
	// Poll asks check until it reports nothing missing, every apart;
	// past budget, timeout says what was last missing; what names the
	// wait in progress lines.
	Poll(ctx context.Context, what string, budget, every time.Duration, check func(context.Context) (string, error), timeout func(missing string) error) error
}

// Task is one action of an upgrade on one host, as the nodes phase's
// executor carries it out: with a Change, the change is recorded and Do
// makes it in a real run only; without one, Do runs in a plan too (a
// step's checks). Then, if not nil, runs after Do in a real run only.
type Task struct {
	Host         string
	ControlPlane bool
	Change       *state.Change
	Do, Then     func(ctx context.Context) error
}

// Rollout makes the changes of an upgrade's steps, through Cluster.
type Rollout struct {
	Cluster Cluster
	Out     *ui.Printer
	// Scale scales a budget by TALOSC_TIME_SCALE.
	Scale func(time.Duration) time.Duration
	// First is the first control plane's hostname, whose bootstrap
	// manifests are synced.
	First string
	// Nodes are the nodes upgraded, in Order; each one's images follow its
	// applies.
	Nodes []Node
	// At is the step under way (its checks set it); At.Number is 0 before
	// the first.
	At Step
}

// Plan kinds of an upgrade's changes, one kind per component so that the
// plan lists them in the order converge makes them: the step's images
// pulled, each control plane's static pods, kube-proxy's image in the
// control planes' configurations, every kubelet, and the bootstrap
// manifests.
const (
	KindImages            = "kube:images"
	KindAPIServer         = "kube:apiserver"
	KindControllerManager = "kube:controller-manager"
	KindScheduler         = "kube:scheduler"
	KindProxy             = "kube:proxy"
	KindKubelet           = "kube:kubelet"
	KindManifests         = "kube:manifests"
)

// Tasks are one step's tasks, run in order: its checks (which set At),
// its image pulls, its changes in order, then the bootstrap manifests
// and, for real, the API server's version. Every step has changes: its
// version is above the lowest running one.
func (u *Rollout) Tasks(st Step) []Task {
	step := fmt.Sprintf("(step %d of %d)", st.Number, st.Of)
	pulls := Pulls(u.Nodes, st)
	pull := state.Change{Action: state.ActionCreate, Kind: KindImages, Name: st.Version.String(), Detail: fmt.Sprintf("pulled ahead on %d node(s) %s", len(pulls), step)}
	tasks := []Task{
		{Host: st.Version.String(), Do: func(ctx context.Context) error {
			u.At = st
			return u.checks(ctx, st)
		}},
		{Host: st.Version.String(), Change: &pull, Do: func(ctx context.Context) error { return u.prePull(ctx, pulls) }},
	}
	for _, ch := range st.Changes {
		n := &u.Nodes[ch.Index]
		change := record(st, u.Nodes, ch)
		tasks = append(tasks, Task{Host: n.Machine.Hostname, ControlPlane: n.ControlPlane(), Change: &change, Do: func(ctx context.Context) error {
			return u.upgradeComponent(ctx, n, ch, st.Version)
		}})
	}
	manifests := state.Change{Action: state.ActionUpdate, Kind: KindManifests, Name: "bootstrap manifests", Detail: fmt.Sprintf("at %s, from %s %s", st.Version, u.First, step), Disruption: state.DisruptionServiceRestart}
	return append(tasks, Task{
		Host: st.Version.String(), Change: &manifests,
		Do:   u.syncManifests,
		Then: func(ctx context.Context) error { return u.apiAt(ctx, st.Version) },
	})
}

// Kind is the plan kind of the component's changes.
func (c Component) Kind() string {
	switch c {
	case APIServer:
		return KindAPIServer
	case ControllerManager:
		return KindControllerManager
	case Scheduler:
		return KindScheduler
	case Proxy:
		return KindProxy
	default:
		return KindKubelet
	}
}

// record is the change's plan entry. A kubelet's name carries the node's
// role, so that the control planes' kubelets, upgraded first, are listed
// first.
func record(st Step, nodes []Node, ch Change) state.Change {
	n := nodes[ch.Index]
	name := n.Machine.Hostname
	if ch.Component == Kubelet {
		name = n.Machine.Role + "/" + name
	}
	return state.Change{
		Action: state.ActionUpdate, Kind: ch.Component.Kind(), Name: name,
		Detail: fmt.Sprintf("%s -> %s (step %d of %d)", ch.From, st.Version, st.Number, st.Of),
		// Each component's new image restarts its pod (a static pod, the
		// kubelet itself).
		Node: n.Machine.Hostname, Disruption: state.DisruptionServiceRestart,
	}
}
