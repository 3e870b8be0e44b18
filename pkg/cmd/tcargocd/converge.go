package tcargocd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/talosc/talosc/pkg/plugin"
)

// Actions of a change.
const (
	actCreate = "create"
	actUpdate = "update"
	actDelete = "delete"
)

// change is one thing converge or destroy does (or, in a dry run, would
// do). It names the object, never its content.
type change struct {
	Action  string `json:"action"`
	Cluster target `json:"cluster"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	obj     object
	uid     string
}

func (c change) String() string {
	sign := map[string]string{actCreate: "+", actUpdate: "~", actDelete: "-"}[c.Action]
	return fmt.Sprintf("%s %s %s %s (%s cluster)", sign, c.Action, c.Kind, c.Name, c.Cluster)
}

func newChange(action string, o object, uid string) change {
	return change{Action: action, Cluster: o.where, Kind: o.kind, Name: nsName(o.ref), obj: o, uid: uid}
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
			deletes = append(deletes, newChange(actDelete, o, l.uid))
		case o.body == nil:
		case !l.found:
			applies = append(applies, newChange(actCreate, o, ""))
		case !l.ours:
			return nil, notOurs(o, ss.s.cluster)
		default:
			d, err := ss.differs(ctx, o, l)
			if err != nil {
				return nil, err
			}
			if d {
				applies = append(applies, newChange(actUpdate, o, ""))
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
		switch c.Action {
		case actDelete:
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
	objs, err := render(ss.s, in)
	if err != nil {
		return plugin.Result{}, err
	}
	changes, err := ss.plan(ctx, objs)
	if err != nil {
		return plugin.Result{}, err
	}
	out := outputs(in, source, changes)
	msgs := messages(changes, c.DryRun)
	logLines(c, msgs)
	if c.DryRun {
		return plugin.Result{Outputs: out, Messages: msgs}, nil
	}
	return plugin.Result{Outputs: out, Messages: msgs}, ss.execute(ctx, changes)
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
			changes = append(changes, newChange(actDelete, o, l.uid))
		case l.found:
			left = append(left, fmt.Sprintf("left alone: %s is not labelled as talosc's for this cluster", o))
		}
	}
	slices.Reverse(changes)
	msgs := append(messages(changes, c.DryRun), left...)
	logLines(c, msgs)
	res := plugin.Result{Outputs: map[string]any{"changes": orEmpty(changes)}, Messages: msgs}
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

// outputs are what converge publishes: the identity it registered and the
// changes (names only).
func outputs(in inputs, source string, changes []change) map[string]any {
	return map[string]any{
		"server": in.access.server, "rancher_id": in.rancherID, "rancher_id_source": source,
		"changes": orEmpty(changes),
	}
}

func orEmpty(cs []change) []change {
	if cs == nil {
		return []change{}
	}
	return cs
}

// messages say what changed (or would, in a dry run).
func messages(changes []change, dryRun bool) []string {
	if len(changes) == 0 {
		return []string{"nothing to change"}
	}
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		s := c.String()
		if dryRun {
			s += " (dry run: not done)"
		}
		out = append(out, s)
	}
	return out
}

// logLines writes lines for humans.
func logLines(c *plugin.Context, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(c.Log, l)
	}
}

// remarshal converts v into out through JSON.
func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
