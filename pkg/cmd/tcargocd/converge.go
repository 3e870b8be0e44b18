package tcargocd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// change is one thing converge or destroy does (or, in a dry run, would
// do) to one object.
type change struct {
	action state.Action
	obj    object
	// uid is the live object's, for a deletion.
	uid string
}

// planOf is what the front door renders and counts: each object's kind
// and name and its cluster, never its content.
func planOf(changes []change) []state.Change {
	out := make([]state.Change, 0, len(changes))
	for _, c := range changes {
		where := "the Argo CD management cluster"
		if c.obj.where == downstream {
			where = "this cluster"
		}
		out = append(out, state.Change{Action: c.action, Kind: "kube:" + strings.ToLower(c.obj.kind), Name: nsName(c.obj.ref), Detail: where})
	}
	return out
}

// plan reads every object and decides its change: create or update what
// is rendered, delete what must not exist and is ours. Applies come in
// order, deletions after them in reverse order (Applications before their
// AppProject). Any object in the way that is not ours refuses the whole
// plan before anything is written.
func (ss *session) plan(ctx context.Context, objs []object) ([]change, error) {
	var applies, deletes []change
	for _, o := range objs {
		l, err := ss.get(ctx, o)
		if err != nil {
			return nil, err
		}
		switch {
		case o.body == nil && l.ours:
			deletes = append(deletes, change{state.ActionDelete, o, l.uid})
		case o.body == nil:
		case !l.found:
			applies = append(applies, change{action: state.ActionCreate, obj: o})
		case !l.ours:
			return nil, notOurs(o, ss.s.cluster)
		default:
			d, err := ss.differs(ctx, o, l)
			if err != nil {
				return nil, err
			}
			if d {
				applies = append(applies, change{action: state.ActionUpdate, obj: o})
			}
		}
	}
	slices.Reverse(deletes)
	return append(applies, deletes...), nil
}

// execute makes the changes, stopping at the first failure.
func (ss *session) execute(ctx context.Context, changes []change) error {
	for _, c := range changes {
		k := ss.client(c.obj)
		var err error
		switch c.action {
		case state.ActionDelete:
			err = k.DeleteUID(ctx, c.obj.ref, c.uid)
		default:
			if c.obj.ref.Namespace == CinderNamespace {
				if err = k.Apply(ctx, cinderNamespace(ss.s), FieldManager); err != nil {
					break
				}
			}
			err = k.Apply(ctx, c.obj.body, FieldManager)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c.obj, err)
		}
	}
	return nil
}

// converge renders and applies everything (AR-3…AR-7); in a dry run it
// only reports what would change.
func converge(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	ss, err := openSession(c)
	if err != nil {
		return plugin.Result{}, err
	}
	in, source, err := ss.inputs(ctx, c)
	if err != nil {
		return plugin.Result{}, err
	}
	kept, err := ss.keepIngress(ctx, &in)
	if err != nil {
		return plugin.Result{}, err
	}
	objs, err := render(ss.s, in)
	if err != nil {
		return plugin.Result{}, err
	}
	changes, err := ss.plan(ctx, objs)
	if err != nil {
		return plugin.Result{}, err
	}
	res := plugin.Result{Plan: planOf(changes), Outputs: map[string]any{
		"server": in.access.server, "rancher_id": in.rancherID, "rancher_id_source": source,
	}}
	if kept {
		res.Messages = []string{"the ingress addresses are kept as the cluster Application has them: this run has no net phase outputs"}
	}
	if c.DryRun {
		return res, nil
	}
	return res, ss.execute(ctx, changes)
}

// destroy deletes what the plugin applied for this cluster (AR-8):
// Applications, AppProject, the cluster and repository Secrets and the
// downstream cloud.conf Secret. An object of the same name that is not
// ours is left alone and said so. The cinder-csi Namespace is left: the
// chart's CSI driver lives there.
func destroy(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	ss, err := openSession(c)
	if err != nil {
		return plugin.Result{}, err
	}
	var changes []change
	var left []string
	for _, o := range refs(ss.s.cluster) {
		l, err := ss.get(ctx, o)
		switch {
		case err != nil:
			return plugin.Result{}, err
		case l.ours:
			changes = append(changes, change{state.ActionDelete, o, l.uid})
		case l.found:
			left = append(left, fmt.Sprintf("left alone: %s is not labelled as talosc's for this cluster", o))
		}
	}
	slices.Reverse(changes)
	res := plugin.Result{Plan: planOf(changes), Messages: left}
	if c.DryRun {
		return res, nil
	}
	return res, ss.execute(ctx, changes)
}

// inputs reads what the objects are rendered from.
func (ss *session) inputs(ctx context.Context, c *plugin.Context) (inputs, string, error) {
	acc, err := readAccess(c.Kubeconfig)
	if err != nil {
		return inputs{}, "", err
	}
	os, err := openstackFrom(c.Config, ss.s.enabled("cinder"))
	if err != nil {
		return inputs{}, "", err
	}
	id, source, err := rancherID(ctx, c.State, ss.down)
	if err != nil {
		return inputs{}, "", err
	}
	ing, err := ingressOf(c.Config, c.State)
	if err != nil {
		return inputs{}, "", err
	}
	return inputs{access: acc, rancherID: id, ingress: ing, openstack: os}, source, nil
}

// remarshal converts v into out through JSON.
func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
