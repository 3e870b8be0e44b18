package tcrancher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/rancherapi"
	"github.com/talosc/talosc/pkg/state"
)

// session is one hook's work: the section, and clients of Rancher and of
// the downstream cluster.
type session struct {
	ctx     *plugin.Context
	sec     map[string]any
	url     string
	rancher *rancherapi.Client
	kube    *kube.Client
}

// open makes the clients of a configured, bootstrapped cluster.
func open(c *plugin.Context) (*session, error) {
	sec, _ := c.Section[Name].(map[string]any)
	url, _ := sec["url"].(string)
	token, _ := sec["token"].(string)
	o := rancherapi.Options{URL: url, Token: token, Logf: func(f string, a ...any) { fmt.Fprintf(c.Log, f+"\n", a...) }}
	if path, _ := sec["ca_file"].(string); path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.Dir, path)
		}
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("rancher.ca_file: %w", err)
		}
		o.CAPEM = pem
	}
	rc, err := rancherapi.New(o)
	if err != nil {
		return nil, err
	}
	kc, err := kube.Load(c.Kubeconfig, kube.Options{})
	if err != nil {
		return nil, fmt.Errorf("the cluster's kubeconfig: %w", err)
	}
	return &session{ctx: c, sec: sec, url: rc.URL(), rancher: rc, kube: kc}, nil
}

// observe reads the identity: the Rancher cluster named after this one,
// the downstream agent, and, for an agent not yet given its cluster id,
// whether its token is one of that cluster's. Any read that fails fails
// the observation: an unknown is never taken for "absent".
func (s *session) observe(ctx context.Context) (observed, error) {
	o := observed{name: s.ctx.Config.Name, url: s.url}
	var err error
	if o.identity, err = s.identity(); err != nil {
		return o, err
	}
	if o.agent, err = rancherapi.ReadAgent(ctx, s.kube); err != nil {
		return o, fmt.Errorf("read the Rancher agent of the cluster: %w", err)
	}
	all, err := s.rancher.ClustersNamed(ctx, o.name)
	if err != nil {
		return o, err
	}
	if o.cluster, o.duplicates, err = s.pick(ctx, o, all); err != nil {
		return o, err
	}
	if o.cluster != nil && o.agent.Installed && o.agent.ClusterID == "" && sameServer(o.agent.URL, s.url) {
		if o.tokenOfCluster, err = s.rancher.HasToken(ctx, o.cluster.ID, o.agent.Token); err != nil {
			return o, err
		}
	}
	return o, nil
}

// pick is the Rancher cluster of this name the identity is decided on.
// Several are resolved only when each is talosc's for this cluster (a
// create applied late beside the one made again): the one in use is kept
// and the others are unused duplicates to delete (provider.DedupeOwned);
// anything else is refused, naming them all.
func (s *session) pick(ctx context.Context, o observed, all []rancherapi.Cluster) (*rancherapi.Cluster, []rancherapi.Cluster, error) {
	switch {
	case len(all) == 0:
		return nil, nil, nil
	case len(all) == 1:
		return &all[0], nil, nil
	case slices.ContainsFunc(all, func(x rancherapi.Cluster) bool { return !x.MarkedFor(o.identity) }):
		return nil, nil, rancherapi.ManyNamed(o.name, all)
	}
	dups := make([]provider.Duplicate[rancherapi.Cluster], len(all))
	for i, x := range all {
		used, err := s.inUse(ctx, x, o.agent)
		if err != nil {
			return nil, nil, err
		}
		dups[i] = provider.Duplicate[rancherapi.Cluster]{Item: x, ID: x.ID, InUse: used}
	}
	keep, drop, err := provider.DedupeOwned(fmt.Sprintf("rancher: cluster %q", o.name), dups)
	if err != nil {
		return nil, nil, err
	}
	return &keep, drop, nil
}

// inUse reports a Rancher cluster an agent uses: connected, or the one the
// downstream agent is registered with (by its id, or by its token before
// Rancher gave it the id).
func (s *session) inUse(ctx context.Context, x rancherapi.Cluster, a rancherapi.Agent) (bool, error) {
	if x.Connected() || (a.Installed && a.ClusterID == x.ID) {
		return true, nil
	}
	if !a.Installed || a.ClusterID != "" || !sameServer(a.URL, s.url) {
		return false, nil
	}
	return s.rancher.HasToken(ctx, x.ID, a.Token)
}

// dropDuplicates deletes (unless dryRun) the unused duplicates of the
// Rancher cluster observed, talosc's own for this cluster.
func (s *session) dropDuplicates(ctx context.Context, o observed, dryRun bool) ([]state.Change, error) {
	var plan []state.Change
	for _, x := range o.duplicates {
		plan = append(plan, state.Change{Action: state.ActionDelete, Kind: "rancher:cluster", Name: o.name, Detail: x.ID + ", an unused duplicate of " + o.cluster.ID})
		if dryRun {
			continue
		}
		if err := s.rancher.DeleteCluster(ctx, x.ID); err != nil {
			return plan, err
		}
		s.logf("deleted Rancher cluster %s (%s): talosc's, unused, a duplicate of %s (a create applied late)", o.name, x.ID, o.cluster.ID)
	}
	return plan, nil
}

// identity is the downstream cluster's (kubeIdentity), from the CA its
// kubeconfig trusts.
func (s *session) identity() (string, error) {
	rc := s.kube.RESTConfig()
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return "", fmt.Errorf("the cluster's kubeconfig: %w", err)
		}
	}
	return kubeIdentity(ca)
}

// logf tells the human.
func (s *session) logf(format string, args ...any) { fmt.Fprintf(s.ctx.Log, format+"\n", args...) }

// openObserved is open, then observe.
func openObserved(ctx context.Context, c *plugin.Context) (*session, observed, error) {
	s, err := open(c)
	if err != nil {
		return nil, observed{}, err
	}
	o, err := s.observe(ctx)
	return s, o, err
}
