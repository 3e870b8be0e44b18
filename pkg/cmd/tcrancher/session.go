package tcrancher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/rancherapi"
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
	if o.cluster, err = s.rancher.FindCluster(ctx, o.name); err != nil {
		return o, err
	}
	if o.agent, err = rancherapi.ReadAgent(ctx, s.kube); err != nil {
		return o, fmt.Errorf("read the Rancher agent of the cluster: %w", err)
	}
	if o.cluster != nil && o.agent.Installed && o.agent.ClusterID == "" && sameServer(o.agent.URL, s.url) {
		if o.tokenOfCluster, err = s.rancher.HasToken(ctx, o.cluster.ID, o.agent.Token); err != nil {
			return o, err
		}
	}
	return o, nil
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
