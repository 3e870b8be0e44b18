package nodes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
	"github.com/talosc/talosc/pkg/ui"
)

// Every wait of the nodes phase is here: the barriers a rollout stands
// behind (Talos's health of the control planes, a node back from its
// restart, the API answering, the final health) and the one poll helper
// under those that poll themselves (a Kubernetes upgrade's waits for a
// static pod or kubelet at its new version poll through it too,
// kubeCluster.Poll). The executor runs them in a real run only (an
// action's then, the policy's barrier); a dry run waits for nothing.

// waiter waits: it holds what the waits read (the run's sessions and
// view, the time scale, the output), and run builds it (run.waiter).
type waiter struct {
	clients *clients
	id      *identity.Identity
	obs     *observed
	desired []config.Machine
	out     *ui.Printer
	scale   func(time.Duration) time.Duration
}

// waiter is the run's waiter, on what the run knows now.
func (r *run) waiter() waiter {
	return waiter{clients: r.clients, id: r.id, obs: r.obs, desired: r.desired, out: r.in.Out, scale: r.in.Env.Scale}
}

// session is the Talos session through the first control plane.
func (w waiter) session(ctx context.Context) (talosAPI, error) {
	c, _, err := w.clients.talosSession(ctx, w.id, w.obs)
	return c, err
}

// waiting is a throttled "still waiting for host" progress line.
func (w waiter) waiting(host string) func(time.Duration) { return waitingLine(w.out, host) }

// The API is stable before a Kubernetes upgrade when it answers
// stableAnswers times in a row, within stableTries tries stableInterval
// apart (apiStable).
const (
	stableAnswers  = 2
	stableTries    = 12
	stableInterval = 10 * time.Second
)

// pacing is how poll asks.
type pacing struct {
	// budget bounds the wait; 0 leaves ending it to check.
	budget time.Duration
	// every is the pause between two asks: backing off from
	// ctxwait.FirstPoll up to it, or, steady, exactly it (answers counted
	// in a row must be apart).
	every  time.Duration
	steady bool
	// what, if not empty, names what is waited for in throttled "still
	// waiting" lines.
	what string
}

// poll asks check until it reports nothing missing. check's error ends the
// wait (a wait that rides through errors folds them into what is missing:
// ridingErrors); past the budget, timeout says what was last missing.
func (w waiter) poll(ctx context.Context, p pacing, check func(context.Context) (string, error), timeout func(missing string) error) error {
	start := time.Now()
	progress := func(time.Duration) {}
	if p.what != "" {
		progress = w.waiting(p.what)
	}
	pause := ctxwait.NewBackoff(p.every)
	for {
		missing, err := check(ctx)
		switch {
		case err != nil:
			return err
		case missing == "":
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case p.budget > 0 && time.Since(start) > p.budget:
			return timeout(missing)
		}
		progress(time.Since(start))
		if p.steady {
			err = ctxwait.Sleep(ctx, p.every)
		} else {
			err = pause.Sleep(ctx)
		}
		if err != nil {
			return err
		}
	}
}

// nodeBack waits for a node that was restarted: when previousBootID is
// known, until it answers with another boot ID within grace
// (I-R7 as Talos reports it: a reboot that happened, not apid dropping,
// which may be missed), else until its Talos API answers; then, for a
// worker, until its Kubernetes node is Ready. A control plane's health
// is the rollout's barrier.
func (w waiter) nodeBack(ctx context.Context, m config.Machine, previousBootID string, grace time.Duration) error {
	addr, ok := w.obs.address(m.Hostname)
	if !ok {
		return fmt.Errorf("no address known for %s", m.Hostname)
	}
	c, err := w.session(ctx)
	if err != nil {
		return err
	}
	if previousBootID != "" {
		if err := c.WaitRebooted(ctx, addr, previousBootID, grace, w.scale(settlePoll), w.waiting(m.Hostname)); err != nil {
			return fmt.Errorf("%s did not reboot within %s: %w", m.Hostname, grace, err)
		}
	}
	if err := c.WaitReachable(ctx, addr, w.scale(reachableBudget), w.scale(reachablePoll), w.waiting(m.Hostname)); err != nil {
		return err
	}
	if m.Role == config.RoleControlPlane {
		return nil
	}
	kc, err := w.clients.kubeClient()
	if err != nil {
		return err
	}
	_, err = kc.WaitReady(ctx, []string{m.Hostname}, w.scale(readyBudget), w.scale(readyPoll), nil)
	return err
}

// healthAttempts is how often a Talos health check is tried (I-R5).
const healthAttempts = 2

// healthTargets are the addresses of the desired control planes and
// workers, what Talos's server-side health check is told to expect, and of
// the control planes a scale-down has yet to remove (still etcd members,
// so the check must count them as control planes).
func (w waiter) healthTargets(gone leaving) (cps, workers []string, err error) {
	for _, m := range w.desired {
		a, ok := w.obs.address(m.Hostname)
		if !ok {
			return nil, nil, fmt.Errorf("no address known for %s", m.Hostname)
		}
		if m.Role == config.RoleControlPlane {
			cps = append(cps, a)
		} else {
			workers = append(workers, a)
		}
	}
	return append(cps, gone.addresses()...), workers, nil
}

// controlPlanesHealthy is the barrier between control-plane changes:
// Talos's server-side health of the desired cluster, with no Kubernetes
// fallback (I-R5, I-S11).
func (w waiter) controlPlanesHealthy(ctx context.Context, gone leaving) error {
	cps, workers, err := w.healthTargets(gone)
	if err != nil {
		return err
	}
	return w.talosHealth(ctx, cps, workers)
}

// talosHealth runs Talos's server-side health check through the first
// control plane, against the internal VIP (I-A5), up to healthAttempts
// times.
func (w waiter) talosHealth(ctx context.Context, cps, workers []string) error {
	c, err := w.session(ctx)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err = c.Health(ctx, talosapi.HealthOptions{
			ControlPlanes: cps, Workers: workers,
			K8sEndpoint: w.obs.vip(),
			Timeout:     w.scale(healthBudget),
			Progress:    func(line string) { w.out.Info("  %s", line) },
		})
		if err == nil || attempt == healthAttempts || ctx.Err() != nil {
			return err
		}
		w.out.Warn("talos health check: %v; trying again", err)
	}
}

// installedImage waits, within the settle grace, for a node that booted
// again to report the new version and schematic (its extensions' state
// may lag its API after a boot: Omni's checkInstalledImage polls too). A
// node that keeps reporting its old installation was rolled back by
// Talos; one whose version or schematic cannot be read is unknown. Both
// stop the rollout.
func (w waiter) installedImage(ctx context.Context, c talosAPI, u talosUpgrade) error {
	host := u.machine.Hostname
	var v, sch string
	check := func(ctx context.Context) (string, error) {
		var err error
		if v, err = c.Version(ctx, u.address); err != nil {
			return "", fmt.Errorf("%s came back, but its version cannot be read: %w", host, err)
		}
		if sch, err = c.Schematic(ctx, u.address); err != nil {
			return "", fmt.Errorf("%s came back, but its schematic cannot be read: %w", host, err)
		}
		if v != u.to || sch != u.schematic {
			return "its old installation", nil
		}
		w.obs.setRunning(host, running{talos: v, schematic: sch})
		return "", nil
	}
	return w.poll(ctx, pacing{budget: w.scale(settleGrace), every: w.scale(settlePoll)}, check, func(string) error {
		return fmt.Errorf("%s came back on %s (schematic %s), not %s (schematic %s): Talos rolled the upgrade back; stopping the rollout",
			host, v, shortID(sch), u.to, shortID(u.schematic))
	})
}

// waitAPI waits, up to the endpoint budget, for the Kubernetes API to
// answer (through a VIP that may be moving to another control plane).
func (w waiter) waitAPI(ctx context.Context) error {
	kc, err := w.clients.kubeClient()
	if err != nil {
		return err
	}
	attempts := max(int(endpointBudget/kube.ProbeInterval), 1)
	if up, err := kc.Probe(ctx, attempts, w.scale(kube.ProbeInterval)); !up {
		return fmt.Errorf("the Kubernetes API did not answer within %s: %w", w.scale(endpointBudget), err)
	}
	return nil
}

// apiStable waits until the API answers stableAnswers times in a row,
// within stableTries tries stableInterval apart.
func (w waiter) apiStable(ctx context.Context, kc kubeAPI) error {
	try, answered := 0, 0
	check := func(ctx context.Context) (string, error) {
		try++
		if up, _ := kc.Probe(ctx, 1, 0); up {
			answered++
		} else {
			answered = 0
		}
		switch {
		case answered >= stableAnswers:
			return "", nil
		case try == stableTries:
			return "", fmt.Errorf("kube-api did not stabilize before k8s upgrade: %d tries %s apart", stableTries, w.scale(stableInterval))
		}
		return "answers in a row", nil
	}
	return w.poll(ctx, pacing{every: w.scale(stableInterval), steady: true}, check, nil)
}

// health waits for Talos's server-side health and for every desired node
// to be Ready; Kubernetes readiness is the fallback when the Talos check
// fails twice (the final check only, §3.1 step 15).
func (r *run) health(ctx context.Context) error {
	w := r.waiter()
	cps, workers, err := w.healthTargets(nil)
	if err != nil {
		return err
	}
	r.in.Out.Info("waiting for the cluster to be healthy")
	talosErr := w.talosHealth(ctx, cps, workers)
	kc, err := r.clients.kubeClient()
	if err != nil {
		return err
	}
	names := make([]string, len(r.desired))
	for i, m := range r.desired {
		names[i] = m.Hostname
	}
	last := -1
	nodes, err := kc.WaitReady(ctx, names, r.scaled(readyBudget), r.scaled(readyPoll), func(ready, total int) {
		if ready != last {
			last = ready
			r.in.Out.Info("  %d of %d nodes Ready", ready, total)
		}
	})
	if err != nil {
		return fmt.Errorf("cluster is unhealthy after converge: %w", errors.Join(talosErr, err))
	}
	if talosErr != nil {
		r.in.Out.Warn("talos health check failed (%v); every node is Ready in Kubernetes, accepting that", talosErr)
	}
	r.out.Up = true
	r.obs.nodes, r.obs.nodesErr = nodes, nil
	r.out.Nodes = nodes
	r.out.KubernetesEndpoint = "https://" + r.obs.netKubernetes().Advertised + ":6443"
	talosconfig, _ := r.clientFile(config.TalosconfigFile)
	kubeconfig, _ := r.clientFile(config.KubeconfigFile)
	r.in.Out.Info("kube api: %s", r.out.KubernetesEndpoint)
	r.in.Out.Info("talosctl: talosctl --talosconfig %s -e %s -n %s <cmd>", talosconfig, cps[0], cps[0])
	r.in.Out.Info("kubectl: kubectl --kubeconfig %s get nodes", kubeconfig)
	return nil
}
