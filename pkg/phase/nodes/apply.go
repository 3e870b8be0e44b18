package nodes

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/configdiff"
)

// driftReads bounds the machine-config reads in flight at once.
const driftReads = 8

// pendingApply is one node whose running configuration differs from
// cluster.yaml's.
type pendingApply struct {
	machine config.Machine
	address string
	config  []byte
	diff    string
	// talos is the node's running Talos version; restart is what deciding
	// it from that version (and the node's dry run) said.
	talos   string
	restart bool
	detail  string
}

// applyConfigs rolls changed machine configurations out to existing nodes
// (reference §3.1 step 8, I-R7, I-R8): every existing node's running
// configuration is read and compared with the one cluster.yaml now gives
// it; a node whose configuration cannot be read fails the run (its state
// is unknown, so nothing may be assumed of it); nodes not visible through
// the kubeconfig are skipped. Control planes are applied one at a time: a
// live apply moves on, a restart-requiring one is settled by the node's
// boot ID changing within the settle grace and then Talos's health with no
// fallback before the next; workers in one pass. A plan shows every
// node's redacted diff and whether it would restart.
func (r *run) applyConfigs(ctx context.Context) error {
	pending, err := r.configDrift(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	ops := make([]op, 0, len(pending))
	restartingCP := false
	for _, p := range pending {
		ops = append(ops, r.applyOp(p))
		restartingCP = restartingCP || (p.restart && p.machine.Role == config.RoleControlPlane)
	}
	if mv, ok := r.movedEndpoint(); ok {
		err = r.moveEndpoint(ctx, mv, ops)
	} else {
		err = r.execute(ctx, rollout{what: "applying the configuration of", healthBefore: restartingCP, healthAfterLast: true}, ops)
	}
	if err != nil {
		return err
	}
	if !r.in.DryRun {
		r.obs.refreshNodes(ctx) // labels and taints follow the applied configs
	}
	return nil
}

// applyOp applies one node's configuration (mode auto) and, when the node
// answers that it reboots for it, waits for it to come back.
func (r *run) applyOp(p pendingApply) op {
	m := p.machine
	rebooted := false
	o := op{host: m.Hostname, controlPlane: m.Role == config.RoleControlPlane}
	o.settled = func() bool { return rebooted }
	o.actions = []action{{
		change: state.Change{Action: state.ActionUpdate, Kind: KindMachineConfig, Name: m.Hostname, Detail: p.detail, Diff: p.diff},
		fn: func(ctx context.Context) error {
			c, _, err := r.obs.talosSession(ctx)
			if err != nil {
				return err
			}
			res, err := c.ApplyConfiguration(ctx, p.address, p.config, false)
			if err != nil {
				return err
			}
			if !res.Reboot {
				return nil
			}
			rebooted = true
			r.in.Out.Info("%s reboots to apply its configuration", m.Hostname)
			return r.nodeBack(ctx, m, res.BootID, r.scaled(settleGrace))
		},
	}}
	return o
}

// configDrift returns, in machine order, every existing desired node
// whose running configuration differs from the generated one.
func (r *run) configDrift(ctx context.Context) ([]pendingApply, error) {
	existing, err := r.appliable()
	if err != nil || len(existing) == 0 {
		return nil, err
	}
	if !r.obs.hasEndpoint() {
		r.in.Out.Warn("machine configurations of existing nodes not compared: the network phase reported no Kubernetes API endpoint")
		return nil, nil
	}
	input, _, err := r.configInput()
	if err != nil {
		return nil, err
	}
	pending := make([]pendingApply, len(existing))
	for i, m := range existing {
		mc, err := r.generate(input, m)
		if err != nil {
			return nil, err
		}
		addr, ok := r.obs.address(m.Hostname)
		if !ok {
			return nil, fmt.Errorf("no address known for %s: its running configuration cannot be compared; refusing to go on with a node in an unknown state", m.Hostname)
		}
		pending[i] = pendingApply{machine: m, address: addr, config: mc.Bytes()}
	}
	if err := r.compare(ctx, pending); err != nil {
		return nil, err
	}
	var out []pendingApply
	for _, p := range pending {
		if p.diff != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// appliable are the existing desired machines visible through the
// kubeconfig; the others are skipped with a message (I-R8). An
// unanswered node list leaves every node's visibility unknown: refused.
func (r *run) appliable() ([]config.Machine, error) {
	if r.obs.nodesErr != nil {
		return nil, fmt.Errorf("could not list the Kubernetes nodes (%w): which nodes to roll configuration out to is unknown; refusing", r.obs.nodesErr)
	}
	var out []config.Machine
	for _, m := range r.desired {
		if _, ok := r.obs.inv.Find(m.Hostname); !ok {
			continue
		}
		if _, ok := r.obs.kubeNode(m.Hostname); !ok {
			r.in.Out.Info("%s: not visible through kubeconfig, config not applied", m.Hostname)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// compare reads every node's running configuration and Talos version
// through the first control plane, driftReads at a time, diffs it,
// redacted, against the desired one, and decides whether applying it
// restarts the node. Any node that does not answer fails the comparison.
func (r *run) compare(ctx context.Context, pending []pendingApply) error {
	c, _, err := r.obs.talosSession(ctx)
	if err != nil {
		return err
	}
	errs := make([]error, len(pending))
	sem := make(chan struct{}, driftReads)
	var wg sync.WaitGroup
	for i := range pending {
		p := &pending[i]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = r.compareOne(ctx, c, p)
		})
	}
	wg.Wait()
	var unread []string
	for i, err := range errs {
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", pending[i].machine.Hostname, err))
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("the running configuration of %d node(s) could not be read, so whether they need changes is unknown; refusing to go on (bring them back, or remove them from cluster.yaml): %s",
			len(unread), strings.Join(unread, "; "))
	}
	return ctx.Err()
}

func (r *run) compareOne(ctx context.Context, c talosAPI, p *pendingApply) error {
	running, err := c.MachineConfig(ctx, p.address)
	if err != nil {
		return err
	}
	if p.diff, err = configdiff.Diff(running, p.config); err != nil || p.diff == "" {
		return err
	}
	if p.talos, err = c.Version(ctx, p.address); err != nil {
		return err
	}
	if neverRebootsOnApply(p.talos) {
		p.detail = applyDetail(p.talos, false, "")
		return nil
	}
	res, err := c.ApplyConfiguration(ctx, p.address, p.config, true)
	if err != nil {
		return fmt.Errorf("dry-run apply: %w", err)
	}
	p.restart = res.Reboot
	p.detail = applyDetail(p.talos, res.Reboot, res.Details)
	return nil
}
