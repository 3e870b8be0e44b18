package nodes

import (
	"context"
	"fmt"
	"strings"
	"time"

	k8supgrade "github.com/siderolabs/go-kubernetes/kubernetes/upgrade"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/releases"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
	"github.com/talosc/talosc/pkg/upgrade"
)

// The budgets of a Kubernetes upgrade (talosctl upgrade-k8s: 5 minutes for
// a mirror pod, 3 minutes, polled every 10 s, for a kubelet), scaled by
// TALOSC_TIME_SCALE.
const (
	staticPodBudget = 5 * time.Minute
	staticPodPoll   = 2 * time.Second
	kubeletBudget   = 3 * time.Minute
	kubeletPoll     = 10 * time.Second
	// The API is stable before an upgrade when it answers stableAnswers
	// times in a row, within stableTries tries stableInterval apart.
	stableAnswers  = 2
	stableTries    = 12
	stableInterval = 10 * time.Second
)

// upgradeKubernetes brings an up cluster's Kubernetes to kubernetes.version
// (reference §3.1 step 9, I-R9, I-12, I-13), as talosctl upgrade-k8s does
// it but driven here (day2.md §1.3 option b, Omni's way). The running
// version is the lowest any existing node's running configuration gives
// one of its components; before an upgrade the API must answer twice in
// a row and report its version. Then every intermediate minor at its
// newest patch, then the target, each step after go-kubernetes' checks
// for its path: its images pulled, each static pod one control plane at a
// time (each running Ready at the step's version before the next),
// kube-proxy, the kubelets (each Ready at it), the bootstrap manifests,
// and the API server at the step's version. Every change is one apply of
// the node's whole configuration with one more component at the step's
// version, so a killed upgrade resumes where it stopped. A plan lists
// every change of every step in that order.
func (r *run) upgradeKubernetes(ctx context.Context) error {
	target, err := config.ParseVersion(r.cfg.Kubernetes.Version)
	if err != nil {
		return fmt.Errorf("kubernetes.version: %w", err)
	}
	nodes, unseen, err := r.kubeNodes(ctx)
	if err != nil || len(nodes) == 0 {
		return err
	}
	if err := kubeupgrade.CheckNoDowngrade(nodes, target); err != nil {
		return err
	}
	lowest, err := kubeupgrade.Lowest(nodes)
	if err != nil || lowest.Compare(target) == 0 {
		return err
	}
	if len(unseen) > 0 {
		return fmt.Errorf("control plane(s) %s not visible through kubeconfig: their Kubernetes components can be neither upgraded nor waited for; refusing the kubernetes upgrade", strings.Join(unseen, ", "))
	}
	api, err := r.stableAPIVersion(ctx)
	if err != nil {
		return err
	}
	steps, err := r.kubeSteps(ctx, lowest, target)
	if err != nil {
		return err
	}
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.String()
	}
	r.in.Out.Info("kubernetes %s -> %s (the API server reports %s): %d step(s), %s", lowest, target, api, len(steps), strings.Join(names, ", "))
	var input machineconfig.Input
	var at kubeupgrade.Step
	readInput := func(context.Context) (err error) {
		input, _, err = r.configInput()
		return err
	}
	var ops []op
	for _, st := range kubeupgrade.Plan(nodes, lowest, steps) {
		ops = append(ops, r.kubeStepOps(&input, &at, nodes, st)...)
	}
	if err := r.executor().execute(ctx, policy{what: "upgrading kubernetes", order: inOrder, prepare: readInput}, ops); err != nil {
		if at.Number == 0 {
			return err
		}
		return fmt.Errorf("kubernetes step %d of %d (%s -> %s): %w", at.Number, at.Of, at.From, at.Version, err)
	}
	return nil
}

// stableAPIVersion waits until the API answers twice in a row (I-R9: a
// Talos upgrade has just restarted the control planes: apiStable; the
// executor waits in a real run only), then reads its version.
func (r *run) stableAPIVersion(ctx context.Context) (string, error) {
	kc, err := r.clients.kubeClient()
	if err != nil {
		return "", err
	}
	stable := func(ctx context.Context) error { return r.waiter().apiStable(ctx, kc) }
	if err := r.executor().do(ctx, action{then: stable}); err != nil {
		return "", err
	}
	return r.apiVersion(ctx, kc)
}

// apiVersion reads the API server's version (retried): configs are never
// generated against an unknown one (I-13).
func (r *run) apiVersion(ctx context.Context, kc kubeAPI) (string, error) {
	v, err := kc.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("could not determine the running cluster's kubernetes version while the kube-api is up; refusing to generate machine configs against an unknown version: %w", err)
	}
	return v, nil
}

// kubeNodes are the existing desired nodes a Kubernetes upgrade takes,
// control planes first, with their running images (read by the
// configuration comparison, or now): those visible as Kubernetes nodes,
// whose kubelets can be waited for. A machine created later in the run
// boots at the target; a worker that is no Kubernetes node is skipped
// with a message (as the apply skips it, I-R8), a control plane is
// returned in unseen: an upgrade that would leave it behind is refused.
func (r *run) kubeNodes(ctx context.Context) (nodes []kubeupgrade.Node, unseen []string, err error) {
	if r.obs.nodesErr != nil {
		return nil, nil, fmt.Errorf("could not list the Kubernetes nodes (%w): which nodes run which Kubernetes version is unknown; refusing", r.obs.nodesErr)
	}
	var unread []config.Machine
	for _, m := range r.desired {
		if _, ok := r.obs.inv.Find(m.Hostname); !ok {
			continue
		}
		if _, ok := r.obs.kubeNode(m.Hostname); !ok {
			if m.Role == config.RoleControlPlane {
				unseen = append(unseen, m.Hostname)
			} else {
				r.in.Out.Info("%s: not visible through kubeconfig, kubernetes not upgraded", m.Hostname)
			}
			continue
		}
		addr, ok := r.obs.address(m.Hostname)
		if !ok {
			return nil, nil, fmt.Errorf("no address known for %s: its running Kubernetes version cannot be read; refusing to go on with a node in an unknown state", m.Hostname)
		}
		nodes = append(nodes, kubeupgrade.Node{Machine: m, Address: addr})
		if _, ok := r.obs.images[m.Hostname]; !ok {
			unread = append(unread, m)
		}
	}
	if len(unread) > 0 {
		c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
		if err != nil {
			return nil, nil, err
		}
		address := func(i int) string { a, _ := r.obs.address(unread[i].Hostname); return a }
		if _, err := r.readRunningImages(ctx, c, unread, address); err != nil {
			return nil, nil, err
		}
	}
	for i := range nodes {
		nodes[i].Images = r.obs.images[nodes[i].Machine.Hostname]
	}
	kubeupgrade.Order(nodes)
	return nodes, unseen, nil
}

// kubeSteps are the versions from lowest to target (I-R9): the releases
// come from the kubelet image repository, as check reads them; when they
// cannot be listed each intermediate minor is taken at v1.<minor>.0. A
// step go-kubernetes does not support is refused before anything changes.
func (r *run) kubeSteps(ctx context.Context, lowest, target config.Version) ([]config.Version, error) {
	repo := r.cfg.KubeletRepositoryURL()
	rel, err := releases.KubernetesVersions(ctx, nil, repo)
	if err != nil {
		r.in.Out.Warn("kubernetes releases could not be listed (%v): each intermediate minor is taken at its first release", err)
		rel = nil
	}
	names, err := upgrade.KubernetesSteps(lowest.String(), target.String(), rel)
	if err != nil {
		return nil, err
	}
	steps := make([]config.Version, len(names))
	from := lowest
	for i, s := range names {
		if steps[i], err = config.ParseVersion(s); err != nil {
			return nil, err
		}
		p, err := k8supgrade.NewPath(from.String(), s)
		if err != nil {
			return nil, err
		}
		if !p.IsSupported() {
			return nil, fmt.Errorf("unsupported kubernetes upgrade path %s (%s -> %s)", p, from, s)
		}
		from = steps[i]
	}
	return steps, nil
}

// kubeStepOps are one step's ops, run in order: its checks (which set at,
// the step under way), its image pulls, its changes in order, then the
// bootstrap manifests and, for real, the API server's version. Every step
// has changes: its version is above the lowest running one. input is the
// generator's input, read once the rollout starts for real.
func (r *run) kubeStepOps(input *machineconfig.Input, at *kubeupgrade.Step, nodes []kubeupgrade.Node, st kubeupgrade.Step) []op {
	step := fmt.Sprintf("(step %d of %d)", st.Number, st.Of)
	pulls := kubeupgrade.Pulls(nodes, st)
	pull := state.Change{Action: state.ActionCreate, Kind: KindKubeImages, Name: st.Version.String(), Detail: fmt.Sprintf("pulled ahead on %d node(s) %s", len(pulls), step)}
	ops := []op{{host: st.Version.String(), actions: []action{
		{fn: func(ctx context.Context) error {
			*at = st
			return r.kubeChecks(ctx, nodes, st)
		}},
		{change: &pull, fn: func(ctx context.Context) error { return r.prePull(ctx, pulls) }},
	}}}
	for _, ch := range st.Changes {
		n := &nodes[ch.Index]
		change := record(st, nodes, ch)
		ops = append(ops, op{host: n.Machine.Hostname, controlPlane: n.ControlPlane(), actions: []action{{
			change: &change,
			fn: func(ctx context.Context) error {
				return r.upgradeComponent(ctx, *input, n, ch, st.Version)
			},
		}}})
	}
	manifests := state.Change{Action: state.ActionUpdate, Kind: KindKubeManifests, Name: "bootstrap manifests", Detail: fmt.Sprintf("at %s, from %s %s", st.Version, r.cp1().Hostname, step), Disruption: state.DisruptionServiceRestart}
	return append(ops, op{host: st.Version.String(), actions: []action{{
		change: &manifests,
		fn:     r.syncManifests,
		then:   func(ctx context.Context) error { return r.apiAt(ctx, st.Version) },
	}}})
}

// apiAt checks that the API server reports version to after its step.
func (r *run) apiAt(ctx context.Context, to config.Version) error {
	kc, err := r.clients.kubeClient()
	if err != nil {
		return err
	}
	api, err := r.apiVersion(ctx, kc)
	if err != nil {
		return err
	}
	if !kubeupgrade.SameVersion(api, to) {
		return fmt.Errorf("after its step to %s the API server reports version %q; stopping the upgrade", to, api)
	}
	return nil
}

// componentKind is the plan kind of a component's changes.
func componentKind(c kubeupgrade.Component) string {
	switch c {
	case kubeupgrade.APIServer:
		return KindKubeAPIServer
	case kubeupgrade.ControllerManager:
		return KindKubeControllerManager
	case kubeupgrade.Scheduler:
		return KindKubeScheduler
	case kubeupgrade.Proxy:
		return KindKubeProxy
	default:
		return KindKubelet
	}
}

// record is the change's plan entry. A kubelet's name carries the node's
// role, so that the control planes' kubelets, upgraded first, are listed
// first.
func record(st kubeupgrade.Step, nodes []kubeupgrade.Node, ch kubeupgrade.Change) state.Change {
	n := nodes[ch.Index]
	name := n.Machine.Hostname
	if ch.Component == kubeupgrade.Kubelet {
		name = n.Machine.Role + "/" + name
	}
	return state.Change{
		Action: state.ActionUpdate, Kind: componentKind(ch.Component), Name: name,
		Detail: fmt.Sprintf("%s -> %s (step %d of %d)", ch.From, st.Version, st.Number, st.Of),
		// Each component's new image restarts its pod (a static pod, the
		// kubelet itself).
		Node: n.Machine.Hostname, Disruption: state.DisruptionServiceRestart,
	}
}
