package nodes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/talosapi"
	"github.com/talosc/talosc/pkg/ui"
)

// scaleDown removes the machines and Kubernetes nodes cluster.yaml no
// longer wants (reference §3.1 step 7, I-S1..I-S13), which validation
// checked and confirmed before the first mutation: control planes one at a
// time, Talos's health with no fallback between them (I-S11), then the
// workers in one pass. Every removal is decided before the first one
// starts; one that cannot be decided safely refuses them all.
func (r *run) scaleDown(ctx context.Context) error {
	removals := preflight.Removals(r.cfg, r.obs.inv, r.obs.nodes)
	if err := onlyConfirmed(removals, r.confirmed); err != nil {
		return err
	}
	removedMembers, err := r.removeStaleMembers(ctx)
	if err != nil || len(removals) == 0 {
		return err
	}
	ops := make([]op, 0, len(removals))
	gone := leaving{}
	for _, rm := range removals {
		f := r.obs.removalFacts(rm)
		d, err := planRemoval(f)
		if err != nil {
			return err
		}
		// A member removeStaleMembers removed (or, in a plan, would
		// remove) was proven gone from the same member list.
		if d.etcdEvidence && !removedMembers[d.host] {
			if err := r.survivor().provedGone(ctx, d.host); err != nil {
				return err
			}
		}
		ops = append(ops, r.removalOp(d, gone))
		if d.controlPlane && d.address != "" {
			gone[d.host] = d.address
		}
	}
	// after: the view refreshed, the removed nodes and machines gone.
	after := func(ctx context.Context) error {
		r.obs.refreshNodes(ctx, r.clients)
		if err := r.obs.refreshInventory(ctx, r.cloud); err != nil {
			return err
		}
		r.out.Machines = r.obs.inv.Machines
		return nil
	}
	return r.executor().execute(ctx, policy{what: "removing control plane", barrier: barrier{between: true, leaving: gone}, after: after, guard: guardControlPlanes}, ops)
}

// onlyConfirmed refuses removing a node the run's validation did not
// check and confirm (one that went missing from cluster.yaml's view
// between the question and this phase, such as a Node that registered
// meanwhile).
func onlyConfirmed(removals []preflight.Removal, confirmed []string) error {
	var extra []string
	for _, rm := range removals {
		if !slices.Contains(confirmed, rm.Name) {
			extra = append(extra, rm.Name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	return fmt.Errorf("refusing to remove %s: not among the removals this run validated and confirmed (%s); re-run to be asked again",
		strings.Join(extra, ", "), strings.Join(confirmed, ", "))
}

// removalFacts gathers what the view knows of one removed node.
func (o *observed) removalFacts(rm preflight.Removal) removalFacts {
	f := removalFacts{host: rm.Name, controlPlane: rm.ControlPlane}
	_, f.machine = o.inv.Find(rm.Name)
	f.address, _ = o.address(rm.Name)
	f.kube = o.kubeState(rm.Name)
	return f
}

// kubeState is host's Kubernetes node's state as a removal sees it.
func (o *observed) kubeState(host string) kubeState {
	switch n, ok := o.kubeNode(host); {
	case o.nodesErr != nil:
		return kubeUnknown
	case !ok:
		return kubeAbsent
	case n.Ready:
		return kubeReady
	}
	return kubeNotReady
}

// removeStaleMembers removes by id, through the surviving control plane,
// the etcd members cluster.yaml does not desire and whose machine is gone
// (staleMembers), one at a time after the backup before a risky change,
// and returns their hostnames. Only a member list that proves who is a
// member (survivor.members: a leader answered, it names the survivor, no
// member is unnamed) is evidence: when there is none, nothing is
// removed and the run says so.
func (r *run) removeStaleMembers(ctx context.Context) (map[string]bool, error) {
	etcd := r.survivor()
	members, err := etcd.members(ctx)
	if err != nil {
		r.in.Out.Warn("etcd members whose machine is gone are not looked for: the member list of %s proves nothing: %v", etcd.host, err)
		return nil, nil
	}
	desired := func(host string) bool {
		return slices.ContainsFunc(r.desired, func(m config.Machine) bool { return m.Hostname == host })
	}
	machine := func(host string) bool { _, ok := r.obs.inv.Find(host); return ok }
	removed := map[string]bool{}
	var ops []op
	for _, s := range staleMembers(members, desired, machine, r.obs.kubeState) {
		if !s.remove {
			r.in.Out.Warn("not removing etcd member %s (%s)", s.member.Hostname, s.why)
			continue
		}
		removed[s.member.Hostname] = true
		ops = append(ops, op{host: s.member.Hostname, controlPlane: true, actions: []action{{
			change: &state.Change{Action: state.ActionDelete, Kind: KindEtcdMember, Name: s.member.Hostname, Detail: s.why + "; removed through " + etcd.host},
			fn:     func(ctx context.Context) error { return etcd.remove(ctx, s.member.ID) },
		}}})
	}
	return removed, r.executor().execute(ctx, policy{what: "removing etcd member", guard: guardControlPlanes}, ops)
}

// removalOp is one node's removal: drain, reset, Node delete, machine
// delete, each only when decided; a control plane's reset takes it out of
// gone once it left etcd.
func (r *run) removalOp(d removal, gone leaving) op {
	o := op{host: d.host, controlPlane: d.controlPlane}
	if d.drain {
		o.actions = append(o.actions, r.drainAction(d.host, drainFailed(r.in.Out, d)))
	}
	if d.reset {
		o.actions = append(o.actions, action{
			change: &state.Change{Action: state.ActionDelete, Kind: KindTalosNode, Name: d.host, Detail: "graceful reset: leave etcd, wipe, shut down"},
			fn:     func(ctx context.Context) error { return r.reset(ctx, d, gone) },
		})
	}
	if d.deleteNode {
		o.actions = append(o.actions, action{
			change: &state.Change{Action: state.ActionDelete, Kind: KindKubeNode, Name: d.host, Detail: "the Kubernetes Node object"},
			fn: func(ctx context.Context) error {
				kc, err := r.clients.kubeClient()
				if err != nil {
					return err
				}
				if d.controlPlane {
					// A reset control plane may have held the API VIP:
					// wait for it to answer through another one.
					if err := r.waiter().waitAPI(ctx); err != nil {
						return fmt.Errorf("after %s left: %w", d.host, err)
					}
				}
				return kc.DeleteNode(ctx, d.host)
			},
		})
	}
	if m, ok := r.obs.inv.Find(d.host); ok && d.deleteMachine {
		o.actions = append(o.actions, action{fn: func(ctx context.Context) error {
			return r.cloud.DeleteMachine(ctx, m, r.plan)
		}})
	}
	return o
}

// drainFailed: a failed drain is fatal unless the node is NotReady (I-S4:
// a Ready or unknown node may be live).
func drainFailed(out *ui.Printer, d removal) func(error) error {
	return func(err error) error {
		if d.kube == kubeNotReady {
			out.Warn("drain of %s failed (%v); it is NotReady, going on", d.host, err)
			return nil
		}
		return fmt.Errorf("drain of %s failed and node is %s; aborting to protect a potentially live node: %w", d.host, d.kube, err)
	}
}

// reset resets the node gracefully (a control plane leaves etcd itself),
// wiping it and shutting it down (I-S13). A control plane whose reset
// failed is deleted only when the surviving control plane's etcd member
// list proves it left (I-S8); a worker's failed reset is only a warning
// (its machine is deleted anyway). A control plane that reset but is
// still listed (its leave was lost) is removed from etcd by id.
func (r *run) reset(ctx context.Context, d removal, gone leaving) error {
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	if d.controlPlane {
		// Talos's own leave would cope, at the cost of an election
		// mid-leave.
		forfeitLeadership(ctx, r.in.Out, c, d.host, d.address, "its reset leaves etcd anyway")
	}
	r.in.Out.Info("resetting %s", d.host)
	err = c.Reset(ctx, d.address, talosapi.ResetOptions{
		Graceful: true, WipeSystem: true,
		Budget: r.scaled(resetBudget), Poll: r.scaled(settlePoll),
	})
	if !d.controlPlane {
		if err != nil {
			r.in.Out.Warn("reset of worker %s failed (%v); deleting its machine anyway", d.host, err)
		}
		return nil
	}
	etcd := r.survivor()
	member, found, lerr := etcd.member(ctx, d.host)
	switch {
	case lerr != nil && err != nil:
		return fmt.Errorf("reset of control plane %s failed (%w) and whether it left etcd is unknown: %w", d.host, err, lerr)
	case lerr != nil:
		return fmt.Errorf("control plane %s was reset but whether it left etcd is unknown: %w", d.host, lerr)
	case found && err != nil:
		return fmt.Errorf("reset of control plane %s failed and it is still an etcd member (id %016x); not deleting its machine: %w", d.host, member.ID, err)
	case found:
		delete(gone, d.host)
		return r.plan.Do(ctx, state.Change{Action: state.ActionDelete, Kind: KindEtcdMember, Name: d.host, Detail: fmt.Sprintf("id %016x, still listed after its reset", member.ID)},
			func(ctx context.Context) error { return etcd.remove(ctx, member.ID) })
	case err != nil:
		r.in.Out.Warn("reset of control plane %s failed (%v), but the etcd member list proves it left; deleting it", d.host, err)
	}
	delete(gone, d.host)
	return nil
}

// leaving are the addresses of the control planes a scale-down removes,
// by hostname, while they are still etcd members.
type leaving map[string]string

// addresses are the leaving control planes' addresses, in hostname order.
func (l leaving) addresses() []string {
	hosts := slices.Sorted(maps.Keys(l))
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = l[h]
	}
	return out
}
