package nodes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
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
// every change of every step in that order. The steps and their changes
// are kubeupgrade's; this phase lends it its sessions, its applies and
// its waits (kubeCluster), and its executor.
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
	steps, err := kubeupgrade.Versions(ctx, r.cfg.KubeletRepositoryURL(), lowest, target, func(err error) {
		r.in.Out.Warn("kubernetes releases could not be listed (%v): each intermediate minor is taken at its first release", err)
	})
	if err != nil {
		return err
	}
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.String()
	}
	r.in.Out.Info("kubernetes %s -> %s (the API server reports %s): %d step(s), %s", lowest, target, api, len(steps), strings.Join(names, ", "))
	k := &kubeCluster{r: r}
	u := &kubeupgrade.Rollout{Cluster: k, Out: r.in.Out, Scale: r.scaled, First: r.cp1().Hostname, Nodes: nodes}
	var ops []op
	for _, st := range kubeupgrade.Plan(nodes, lowest, steps) {
		for _, t := range u.Tasks(st) {
			ops = append(ops, op{host: t.Host, controlPlane: t.ControlPlane, actions: []action{{change: t.Change, fn: t.Do, then: t.Then}}})
		}
	}
	if err := r.executor().execute(ctx, policy{what: "upgrading kubernetes", order: inOrder, prepare: k.readInput, guard: guardAll}, ops); err != nil {
		if u.At.Number == 0 {
			return err
		}
		return fmt.Errorf("kubernetes step %d of %d (%s -> %s): %w", u.At.Number, u.At.Of, u.At.From, u.At.Version, err)
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
	return kubeupgrade.APIVersion(ctx, kc)
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
		if _, err := r.obs.readRunningImages(ctx, c, unread, address); err != nil {
			return nil, nil, err
		}
	}
	for i := range nodes {
		nodes[i].Images = r.obs.images[nodes[i].Machine.Hostname]
	}
	kubeupgrade.Order(nodes)
	return nodes, unseen, nil
}

// kubeCluster is the nodes phase as a Kubernetes upgrade works through
// it (kubeupgrade.Cluster): the run's sessions, the apply of a node's
// configuration generated from input, and the barrier's poll.
type kubeCluster struct {
	r *run
	// input is the generator's input, read once the rollout starts for
	// real (readInput).
	input machineconfig.Input
}

// readInput reads the generator's input.
func (k *kubeCluster) readInput(context.Context) (err error) {
	k.input, _, err = k.r.configInput()
	return err
}

// Talos is the session through the first control plane and its address.
func (k *kubeCluster) Talos(ctx context.Context) (kubeupgrade.Talos, string, error) {
	c, addr, err := k.r.clients.talosSession(ctx, k.r.id, k.r.obs)
	if err != nil {
		return nil, "", err
	}
	return c, addr, nil
}

// Kube is the run's Kubernetes client.
func (k *kubeCluster) Kube() (kubeupgrade.Kube, error) {
	kc, err := k.r.clients.kubeClient()
	if err != nil {
		return nil, err
	}
	return kc, nil
}

// Apply applies n's configuration at images (applyConfig: a restart is
// waited for) and remembers the images it now runs.
func (k *kubeCluster) Apply(ctx context.Context, n kubeupgrade.Node, images machineconfig.KubernetesImages) error {
	mc, err := k.r.generate(k.input, n.Machine, images)
	if err != nil {
		return err
	}
	if _, err := k.r.applyConfig(ctx, n.Machine, n.Address, mc.Bytes()); err != nil {
		return err
	}
	k.r.obs.images[n.Machine.Hostname] = images
	return nil
}

// Poll is the barrier's poll.
func (k *kubeCluster) Poll(ctx context.Context, what string, budget, every time.Duration, check func(context.Context) (string, error), timeout func(missing string) error) error {
	return k.r.waiter().poll(ctx, pacing{budget: budget, every: every, what: what}, check, timeout)
}
