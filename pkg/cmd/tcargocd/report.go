package tcargocd

import (
	"context"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/plugin"
)

// States of a resource in a check report.
const (
	stateOK      = "ok"
	stateMissing = "missing"
	stateDiffers = "differs"
	// stateNotOurs: an object of that name exists but talosc did not apply
	// it for this cluster.
	stateNotOurs = "not ours"
	// stateUnwanted: ours, but its feature is off (converge deletes it).
	stateUnwanted = "unwanted"
)

// resource is one row of a status or check report.
type resource struct {
	Cluster target `json:"cluster"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	// State is set by check.
	State string `json:"state,omitempty"`
}

// status reports which rendered resources exist (AR-8).
func status(ctx context.Context, c *plugin.Context) (map[string]any, error) {
	return report(ctx, c, false)
}

// check reports, besides status, whether each resource is as converge
// would leave it; ok is false when any is missing or differs (AR-8).
func check(ctx context.Context, c *plugin.Context) (map[string]any, error) {
	return report(ctx, c, true)
}

func report(ctx context.Context, c *plugin.Context, compare bool) (map[string]any, error) {
	ss, err := openSession(c)
	if err != nil {
		return nil, err
	}
	in, source, err := ss.inputs(ctx, c)
	if err != nil {
		return nil, err
	}
	rep := map[string]any{
		"management": ss.mgmt.Server(), "server": in.access.server,
		"rancher_id": in.rancherID, "rancher_id_source": source,
	}
	if kept, err := ss.keepIngress(ctx, &in); err != nil {
		return nil, err
	} else if kept {
		rep["not_compared"] = []string{"the cluster Application's ingress addresses (the net phase publishes them to converge and status only)"}
	} else if !in.ingress.known {
		in.ingress = ingress{known: true, addresses: []string{}} // no Application to compare: it is reported missing
	}
	objs, err := render(ss.s, in)
	if err != nil {
		return nil, err
	}
	rows, ok, err := ss.rows(ctx, objs, compare)
	if err != nil {
		return nil, err
	}
	rep["resources"] = rows
	if compare {
		rep["ok"] = ok
	}
	return rep, nil
}

// rows reads every object: rendered ones always get a row, unrendered ones
// only when they still exist.
func (ss *session) rows(ctx context.Context, objs []object, compare bool) ([]resource, bool, error) {
	rows := []resource{}
	allOK := true
	for _, o := range objs {
		l, err := ss.get(ctx, o)
		if err != nil {
			return nil, false, err
		}
		if o.body == nil && !l.found {
			continue
		}
		r := resource{Cluster: o.where, Kind: o.kind, Name: nsName(o.ref), Exists: l.found}
		if compare {
			if r.State, err = ss.state(ctx, o, l); err != nil {
				return nil, false, err
			}
			allOK = allOK && r.State == stateOK
		}
		rows = append(rows, r)
	}
	return rows, allOK, nil
}

// state is one object's check verdict.
func (ss *session) state(ctx context.Context, o object, l live) (string, error) {
	switch {
	case !l.found:
		return stateMissing, nil
	case !l.ours:
		return stateNotOurs, nil
	case o.body == nil:
		return stateUnwanted, nil
	}
	d, err := ss.differs(ctx, o, l)
	if err != nil || !d {
		return stateOK, err
	}
	return stateDiffers, nil
}

// keepIngress, when the cluster Application is rendered and the state
// document has no net phase outputs (check, a standalone run), takes the
// ingress addresses and the OpenStack project as the live cluster
// Application (ours) has them: the
// net phase published them to the converge that applied it. It reports
// whether it did; with no such Application they stay unknown.
func (ss *session) keepIngress(ctx context.Context, in *inputs) (bool, error) {
	if !ss.s.repositories() || in.ingress.known {
		return false, nil
	}
	app := refs(ss.s.cluster)[4]
	l, err := ss.get(ctx, app)
	if err != nil || !l.ours {
		return false, err
	}
	var a struct {
		Spec struct {
			Source struct {
				Helm struct {
					Values string `json:"values"`
				} `json:"helm"`
			} `json:"source"`
		} `json:"spec"`
	}
	var v struct {
		MetalLB struct {
			Addresses []string `yaml:"addresses"`
		} `yaml:"metallb"`
		Ingress struct {
			PublicIP  string `yaml:"publicIP"`
			PrivateIP string `yaml:"privateIP"`
		} `yaml:"ingresscontroller"`
		OpenStack struct {
			Project string `yaml:"project"`
		} `yaml:"openstack"`
	}
	if err := remarshal(l.obj, &a); err != nil {
		return false, fmt.Errorf("%s: %w", app, err)
	}
	if err := yaml.Unmarshal([]byte(a.Spec.Source.Helm.Values), &v); err != nil {
		return false, fmt.Errorf("%s: its Helm values: %w", app, err)
	}
	if v.MetalLB.Addresses == nil {
		v.MetalLB.Addresses = []string{}
	}
	in.ingress = ingress{known: true, addresses: v.MetalLB.Addresses, publicIP: v.Ingress.PublicIP, privateIP: v.Ingress.PrivateIP, project: v.OpenStack.Project}
	return true, nil
}
