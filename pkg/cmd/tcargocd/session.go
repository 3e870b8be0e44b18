package tcargocd

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/plugin"
)

// session is one hook's clients: the management cluster (the apply target,
// AR-1) and this, the downstream, cluster.
type session struct {
	s          settings
	mgmt, down *kube.Client
}

// openSession reads the settings and builds both clients. Before the first
// bootstrap there is no kubeconfig to build the cluster Secret from, so the
// work is deferred (AR-9).
func openSession(c *plugin.Context) (*session, error) {
	if !c.Bootstrapped() {
		return nil, plugin.Defer(NeedsKubeconfig)
	}
	s := readSettings(c.Config, c.Section[Name])
	mgmt, err := kube.LoadContext(s.kubeconfig, s.kubeContext, kube.Options{})
	if err != nil {
		return nil, fmt.Errorf("the Argo CD management cluster (argocd.kubeconfig/argocd.context in secrets.yaml): %w", err)
	}
	down, err := kube.Load(c.Kubeconfig, kube.Options{})
	if err != nil {
		return nil, fmt.Errorf("the cluster's own API: %w", err)
	}
	return &session{s: s, mgmt: mgmt, down: down}, nil
}

// client is the client of the cluster o lives in.
func (ss *session) client(o object) *kube.Client {
	if o.where == downstream {
		return ss.down
	}
	return ss.mgmt
}

// live is an object as its cluster holds it.
type live struct {
	found bool
	// ours: it carries the plugin's labels for this cluster.
	ours bool
	obj  map[string]any
	uid  string
}

type meta struct {
	Metadata struct {
		UID    string            `json:"uid"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

// get reads o's live object. An unreadable one is an error, never absent.
func (ss *session) get(ctx context.Context, o object) (live, error) {
	var obj map[string]any
	found, err := ss.client(o).Get(ctx, o.ref, &obj)
	if err != nil || !found {
		return live{}, err
	}
	var m meta
	if err := remarshal(obj, &m); err != nil {
		return live{}, fmt.Errorf("%s: %w", o, err)
	}
	l := m.Metadata.Labels
	return live{found: true, obj: obj, uid: m.Metadata.UID, ours: l[LabelManagedBy] == managedBy && l[LabelCluster] == ss.s.cluster}, nil
}

// differs reports whether applying o would change its live object l: the
// API's dry run of the apply (defaults and schema included) compared with
// what is stored, bookkeeping aside.
func (ss *session) differs(ctx context.Context, o object, l live) (bool, error) {
	after, err := ss.client(o).ApplyDryRun(ctx, o.body, FieldManager)
	if err != nil {
		return false, fmt.Errorf("%s: %w", o, err)
	}
	return !reflect.DeepEqual(comparable(after), comparable(l.obj)), nil
}

// comparable is obj without the fields every write changes.
func comparable(obj map[string]any) map[string]any {
	out := maps.Clone(obj)
	if m, ok := obj["metadata"].(map[string]any); ok {
		m = maps.Clone(m)
		for _, k := range []string{"managedFields", "resourceVersion", "generation"} {
			delete(m, k)
		}
		out["metadata"] = m
	}
	return out
}

// notOurs is the refusal to touch an object the plugin did not apply.
func notOurs(o object, cluster string) error {
	return fmt.Errorf("%s exists but is not labelled %s=%s, %s=%s: talosc did not apply it for this cluster and will not take it over or delete it; remove or rename it, or rename the cluster",
		o, LabelManagedBy, managedBy, LabelCluster, cluster)
}
