package tcrancher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/rancherapi"
	"github.com/talosc/talosc/pkg/state"
)

// The import's waits (RA-3): the cluster's namespace, then the token's
// manifest URL, each up to two minutes, polled every two seconds at most.
const (
	importBudget = 120 * time.Second
	importPoll   = 2 * time.Second
	// fieldManager owns what the plugin applies downstream.
	fieldManager = "talosc"
)

// Outputs is what converge publishes for later plugins and the front door
// (RA-8).
type Outputs struct {
	ClusterID string              `json:"cluster_id"`
	URL       string              `json:"url"`
	Members   map[string][]string `json:"members"`
}

// converge imports the cluster into Rancher when it is not yet (RA-2…RA-4)
// and makes its cluster-owner and cluster-member bindings those the
// section lists (RA-5…RA-7). Members are resolved and the identity decided
// before anything changes; in a dry run nothing changes at all.
func converge(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	if !c.Bootstrapped() {
		return deferred(), nil
	}
	s, o, err := openObserved(ctx, c)
	if err != nil {
		return plugin.Result{}, err
	}
	res, err := resolve(ctx, s.rancher, members(s.sec))
	if err != nil {
		return plugin.Result{}, err
	}
	v, err := convergeVerdict(o)
	if err != nil {
		return plugin.Result{}, err
	}
	plan, err := s.dropDuplicates(ctx, o, c.DryRun)
	if err != nil {
		return plugin.Result{Plan: plan}, err
	}
	id := ""
	if o.cluster != nil {
		id = o.cluster.ID
	}
	if v == importNew {
		plan = append(plan, state.Change{Action: state.ActionCreate, Kind: "rancher:cluster", Name: o.name, Detail: "import into " + s.url})
		if id, err = s.createCluster(ctx, o, id, c.DryRun); err != nil {
			return plugin.Result{}, err
		}
	}
	if v == importNew || v == resumeImport {
		plan = append(plan, state.Change{Action: state.ActionCreate, Kind: "rancher:agent", Name: rancherapi.AgentNamespace, Detail: "the import manifest, applied to this cluster"})
		if !c.DryRun {
			if err := s.importAgent(ctx, id); err != nil {
				return plugin.Result{Outputs: Outputs{ClusterID: id, URL: s.url}}, err
			}
		}
	}
	more, err := s.reconcile(ctx, id, res, c.DryRun)
	plan = append(plan, more...)
	out := Outputs{ClusterID: id, URL: s.url, Members: res.names()}
	if err != nil {
		return plugin.Result{Outputs: out}, err
	}
	return plugin.Result{Outputs: out, Plan: plan}, nil
}

// convergeVerdict is o's verdict when converge may go on (import, resume
// an import, or keep the attached cluster), otherwise why it may not.
func convergeVerdict(o observed) (verdict, error) {
	v, why := o.decide()
	if v != importNew && v != resumeImport && v != attached {
		return v, errors.New(why)
	}
	return v, nil
}

// createCluster creates o's cluster in Rancher and returns its id; a dry
// run creates nothing and returns id as it is.
func (s *session) createCluster(ctx context.Context, o observed, id string, dryRun bool) (string, error) {
	if dryRun {
		return id, nil
	}
	cl, err := s.rancher.CreateCluster(ctx, o.name, o.identity)
	if err != nil {
		return "", err
	}
	s.logf("created Rancher cluster %s (%s)", o.name, cl.ID)
	return cl.ID, nil
}

// importAgent applies the cluster's import manifest downstream, by
// server-side apply: the cluster's namespace first (RA-3), then a
// registration token whose manifest URL a controller has filled.
func (s *session) importAgent(ctx context.Context, id string) error {
	s.logf("waiting for Rancher to make cluster %s's namespace", id)
	if err := s.rancher.WaitBacking(ctx, id, importBudget, importPoll); err != nil {
		return err
	}
	u, err := s.rancher.ManifestURL(ctx, id, importBudget, importPoll)
	if err != nil {
		return err
	}
	body, err := s.rancher.Fetch(ctx, u)
	if err != nil {
		return err
	}
	objs, err := documents(body)
	if err != nil {
		return fmt.Errorf("the import manifest: %w", err)
	}
	for _, obj := range objs {
		if err := s.kube.Apply(ctx, obj, fieldManager); err != nil {
			return fmt.Errorf("apply the import manifest: %w", err)
		}
	}
	s.logf("applied the Rancher agent (%d objects); it connects on its own", len(objs))
	return nil
}

// documents splits a multi-document YAML manifest into objects.
func documents(body []byte) ([]map[string]any, error) {
	var out []map[string]any
	for doc := range strings.SplitSeq("\n"+string(body), "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no object in it")
	}
	return out, nil
}

// reconcile plans the binding changes of cluster id and, unless dryRun,
// makes them. A cluster not made yet (a dry-run import) has none.
func (s *session) reconcile(ctx context.Context, id string, res resolved, dryRun bool) ([]state.Change, error) {
	var existing []rancherapi.Binding
	if id != "" {
		var err error
		if existing, err = s.rancher.Bindings(ctx, id); err != nil {
			return nil, err
		}
	}
	desired := res.desired()
	ch := reconcile(desired, existing)
	var plan []state.Change
	for _, b := range ch.add {
		plan = append(plan, state.Change{Action: state.ActionCreate, Kind: "rancher:binding", Name: strings.Join(desired[b], ","), Detail: b.role + ", " + b.principal})
		if !dryRun {
			if err := s.rancher.Bind(ctx, id, b.principal, b.role); err != nil {
				return plan, err
			}
		}
	}
	for _, b := range ch.remove {
		plan = append(plan, state.Change{Action: state.ActionDelete, Kind: "rancher:binding", Name: b.Name, Detail: b.RoleTemplateID + ", " + b.UserPrincipalID})
		if !dryRun {
			if err := s.rancher.Unbind(ctx, b.ID); err != nil {
				return plan, err
			}
		}
	}
	return plan, nil
}

// names are the resolved members' principal ids by tier.
func (r resolved) names() map[string][]string {
	out := map[string][]string{"admins": {}, "users": {}}
	for m, p := range r {
		out[m.tier] = append(out[m.tier], p.ID)
	}
	for tier, ids := range out {
		slices.Sort(ids)
		out[tier] = slices.Compact(ids)
	}
	return out
}

// deferred is converge's and destroy's result before the first bootstrap:
// nothing can be imported into Rancher, or was, without the kubeconfig.
func deferred() plugin.Result {
	return plugin.Result{Status: state.StatusDeferred, Outputs: map[string]any{"deferred": true}, Messages: []string{NeedsKubeconfig}}
}
