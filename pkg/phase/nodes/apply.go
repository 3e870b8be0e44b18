package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/configdiff"
)

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
	ops, restartingCP, err := r.applyOps(ctx)
	if err != nil || len(ops) == 0 {
		return err
	}
	return r.executor().execute(ctx, policy{what: "applying the configuration of", barrier: barrier{before: restartingCP, between: true, afterLast: true}, after: r.refreshNodes, guard: restarting(restartingCP)}, ops)
}

// applyOps are the apply of every drifted node (configDrift), and whether
// one of them restarts a control plane.
func (r *run) applyOps(ctx context.Context) (ops []op, restartingCP bool, err error) {
	pending, err := r.configDrift(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, p := range pending {
		ops = append(ops, r.applyOp(p))
		restartingCP = restartingCP || (p.restart && p.machine.Role == config.RoleControlPlane)
	}
	return ops, restartingCP, nil
}

// refreshNodes refreshes the Kubernetes nodes: labels and taints follow the
// applied configurations.
func (r *run) refreshNodes(ctx context.Context) error {
	r.obs.refreshNodes(ctx, r.clients)
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
		change: &state.Change{Action: state.ActionUpdate, Kind: KindMachineConfig, Name: m.Hostname, Detail: p.detail, Diff: p.diff, Disruption: applyDisruption(p.restart)},
		fn: func(ctx context.Context) (err error) {
			rebooted, err = r.applyConfig(ctx, m, p.address, p.config)
			return err
		},
	}}
	return o
}

// applyConfig applies a node's whole configuration (mode auto) and, when
// the node answers that it reboots for it, waits for it to come back.
func (r *run) applyConfig(ctx context.Context, m config.Machine, address string, data []byte) (rebooted bool, err error) {
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return false, err
	}
	res, err := c.ApplyConfiguration(ctx, address, data, false)
	if err != nil || !res.Reboot {
		return false, err
	}
	r.in.Out.Info("%s reboots to apply its configuration", m.Hostname)
	return true, r.waiter().nodeBack(ctx, m, res.BootID, r.scaled(settleGrace))
}

// configDrift returns, in machine order, every existing desired node
// whose running configuration differs from the generated one. Each
// node's configuration is generated at the Kubernetes images it runs
// (only the Kubernetes upgrade moves those, I-13) and read once.
func (r *run) configDrift(ctx context.Context) ([]pendingApply, error) {
	existing, err := r.appliable()
	if err != nil || len(existing) == 0 {
		return nil, err
	}
	if !r.obs.hasEndpoint() {
		r.in.Out.Warn("machine configurations of existing nodes not compared: the network phase reported no Kubernetes API endpoint")
		return nil, nil
	}
	pending := make([]pendingApply, len(existing))
	for i, m := range existing {
		addr, ok := r.obs.address(m.Hostname)
		if !ok {
			return nil, fmt.Errorf("no address known for %s: its running configuration cannot be compared; refusing to go on with a node in an unknown state", m.Hostname)
		}
		pending[i] = pendingApply{machine: m, address: addr}
	}
	input, _, err := r.configInput()
	if err != nil {
		return nil, err
	}
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return nil, err
	}
	running, err := r.obs.readRunningImages(ctx, c, existing, func(i int) string { return pending[i].address })
	if err != nil {
		return nil, err
	}
	var out []pendingApply
	for i, p := range pending {
		mc, err := r.generate(input, p.machine, r.obs.images[p.machine.Hostname])
		if err != nil {
			return nil, err
		}
		p.config = mc.Bytes()
		if p.diff, err = configdiff.Diff(running[i], p.config, r.in.Config.RevealSecretValues()...); err != nil {
			return nil, fmt.Errorf("%s: %w", p.machine.Hostname, err)
		}
		if p.diff != "" {
			out = append(out, p)
		}
	}
	hosts := make([]string, len(out))
	for i, p := range out {
		hosts[i] = p.machine.Hostname
	}
	if err := onEachNode(ctx, hosts, func(ctx context.Context, i int) error { return r.decideRestart(ctx, c, &out[i]) }); err != nil {
		return nil, err
	}
	return out, nil
}

// appliable are the existing desired machines, which must all be visible
// through the kubeconfig. The reference skips an invisible one (I-R8);
// talosc refuses it (I-V2): its configuration, firewall included,
// would be left behind the cloud's security group while the run claims
// success. Validation refuses it first; this holds when a Node vanished
// since. An unanswered node list leaves every node's visibility unknown:
// refused too.
func (r *run) appliable() ([]config.Machine, error) {
	if r.obs.nodesErr != nil {
		return nil, fmt.Errorf("could not list the Kubernetes nodes (%w): which nodes to roll configuration out to is unknown; refusing", r.obs.nodesErr)
	}
	var out []config.Machine
	var invisible []string
	for _, m := range r.desired {
		if _, ok := r.obs.inv.Find(m.Hostname); !ok {
			continue
		}
		if _, ok := r.obs.kubeNode(m.Hostname); !ok {
			invisible = append(invisible, m.Hostname)
			continue
		}
		out = append(out, m)
	}
	if len(invisible) > 0 {
		return nil, fmt.Errorf("%s: not visible through kubeconfig, so its configuration cannot be rolled out; refusing (let it join, or remove it from cluster.yaml)", strings.Join(invisible, ", "))
	}
	return out, nil
}

// decideRestart reads a drifted node's Talos version and decides whether
// applying its configuration restarts it: never from Talos 1.14, else as
// the node's own dry run says.
func (r *run) decideRestart(ctx context.Context, c talosAPI, p *pendingApply) error {
	var err error
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

// applyDisruption is an apply's class: a reboot when the node's running
// Talos said (its dry run) it restarts for it, else a live apply.
func applyDisruption(restart bool) state.Disruption {
	if restart {
		return state.DisruptionReboot
	}
	return state.DisruptionLiveApply
}
