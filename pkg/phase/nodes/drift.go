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

// KindMachineConfig is the plan kind of a change to a node's machine
// configuration.
const KindMachineConfig = "talos:machineconfig"

// checkConfigs compares every existing node's running machine
// configuration with the one cluster.yaml now gives it (§3.1 steps 6 and
// 8; an edit must never be accepted silently, §7 item 5). A plan records
// one update per differing node, with the redacted diff; converge refuses
// before touching any node, since this build cannot roll configurations
// out safely yet.
func (r *run) checkConfigs(ctx context.Context) error {
	changes, err := r.configDrift(ctx)
	if err != nil || len(changes) == 0 {
		return err
	}
	if r.in.DryRun {
		for _, c := range changes {
			r.plan.Record(c)
		}
		return nil
	}
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.Name
	}
	return fmt.Errorf("machine configuration changes to existing nodes are not supported by this talosc build yet (%d node(s): %s): revert the cluster.yaml change, or wait for rollouts",
		len(names), strings.Join(names, ", "))
}

// nodeDrift is what comparing one node found.
type nodeDrift struct {
	diff string
	// unread is why the running configuration could not be read.
	unread error
	err    error
}

// configDrift returns a talos:machineconfig update, in machine order, for
// every existing desired node whose Talos API answers with a configuration
// that differs from the generated one. Nodes that do not answer are
// reported and left out.
func (r *run) configDrift(ctx context.Context) ([]state.Change, error) {
	var existing []config.Machine
	for _, m := range r.desired {
		if _, ok := r.inv.Find(m.Hostname); ok {
			existing = append(existing, m)
		}
	}
	if len(existing) == 0 {
		return nil, nil
	}
	if !r.hasEndpoint() {
		r.in.Out.Warn("machine configurations of existing nodes not compared: the network phase reported no Kubernetes API endpoint")
		return nil, nil
	}
	input, _, err := r.configInput()
	if err != nil {
		return nil, err
	}
	desired := make([][]byte, len(existing))
	for i, m := range existing {
		mc, err := r.generate(input, m)
		if err != nil {
			return nil, err
		}
		desired[i] = mc.Bytes()
	}
	found, err := r.compare(ctx, existing, desired)
	if err != nil {
		return nil, err
	}
	var changes []state.Change
	for i, d := range found {
		switch {
		case d.err != nil:
			return nil, d.err
		case d.unread != nil:
			r.in.Out.Warn("machine configuration of %s not compared: %v", existing[i].Hostname, d.unread)
		case d.diff != "":
			changes = append(changes, state.Change{
				Action: state.ActionUpdate, Kind: KindMachineConfig, Name: existing[i].Hostname,
				Detail: "the running configuration differs from cluster.yaml's", Diff: d.diff,
			})
		}
	}
	return changes, nil
}

// compare reads every node's running configuration through the first
// control plane (talosctl -e CP1 -n NODE), driftReads at a time, and diffs
// it against desired[i], redacted.
func (r *run) compare(ctx context.Context, nodes []config.Machine, desired [][]byte) ([]nodeDrift, error) {
	cp1, ok := r.address(r.desired[0].Hostname)
	if !ok {
		return nil, fmt.Errorf("no address known for %s", r.desired[0].Hostname)
	}
	c, err := r.talos(ctx, cp1)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	found := make([]nodeDrift, len(nodes))
	sem := make(chan struct{}, driftReads)
	var wg sync.WaitGroup
	for i, m := range nodes {
		addr, ok := r.address(m.Hostname)
		if !ok {
			found[i].unread = fmt.Errorf("no address known for %s", m.Hostname)
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			running, err := c.MachineConfig(ctx, addr)
			if err != nil {
				found[i].unread = err
				return
			}
			found[i].diff, err = configdiff.Diff(running, desired[i])
			if err != nil {
				found[i].err = fmt.Errorf("compare the machine configuration of %s: %w", m.Hostname, err)
			}
		})
	}
	wg.Wait()
	return found, ctx.Err()
}
