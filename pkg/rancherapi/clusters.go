package rancherapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
)

// Cluster is a Rancher management cluster as v3 shows it.
type Cluster struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	State       string            `json:"state"`
	Driver      string            `json:"driver"`
	Removed     string            `json:"removed"`
	Conditions  []Condition       `json:"conditions"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// talosc's marker on the Rancher clusters it creates: the label says
// talosc made it, the annotation for which cluster (ClusterOf).
const (
	// ManagedByLabel is set to ManagedBy on every cluster talosc creates.
	ManagedByLabel = "talosc.dev/managed-by"
	// ManagedBy is ManagedByLabel's value.
	ManagedBy = "talosc"
	// IdentityAnnotation holds the identity of the cluster talosc imported
	// (the fingerprint of its Kubernetes CA): a later cluster of the same
	// name has another.
	IdentityAnnotation = "talosc.dev/cluster-identity"
)

// Marked reports a cluster talosc created, for whichever cluster.
func (c Cluster) Marked() bool { return c.Labels[ManagedByLabel] == ManagedBy }

// MarkedFor reports a cluster talosc created for the cluster of identity.
func (c Cluster) MarkedFor(identity string) bool {
	return c.Marked() && identity != "" && c.Annotations[IdentityAnnotation] == identity
}

// Condition is one of a cluster's conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Condition returns the status of the condition typ ("" when absent).
func (c Cluster) Condition(typ string) string {
	for _, x := range c.Conditions {
		if x.Type == typ {
			return x.Status
		}
	}
	return ""
}

// Connected reports whether the cluster's agent has connected: Rancher
// sets Connected, and the driver turns "imported"
// (R@v2.11.3:pkg/tunnelserver/mcmauthorizer/tunnel.go:294-303).
func (c Cluster) Connected() bool {
	return c.Condition("Connected") == "True" || c.Driver == "imported"
}

type collection[T any] struct {
	Data []T `json:"data"`
}

// FindCluster returns the live cluster named name, if any; more than one
// is an error (RA-2).
func (c *Client) FindCluster(ctx context.Context, name string) (*Cluster, error) {
	found, err := c.ClustersNamed(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case len(found) == 0:
		return nil, nil
	case len(found) == 1:
		return &found[0], nil
	}
	return nil, ManyNamed(name, found)
}

// ClustersNamed returns the live clusters named name. It asks with ?name=
// (norman ignores ?filter=name=, which lists every cluster) and filters
// the rows again by exact name, leaving out clusters being removed.
func (c *Client) ClustersNamed(ctx context.Context, name string) ([]Cluster, error) {
	var list collection[Cluster]
	if err := c.do(ctx, http.MethodGet, "/v3/clusters", url.Values{"name": {name}}, nil, &list); err != nil {
		return nil, err
	}
	var found []Cluster
	for _, x := range list.Data {
		if x.Name == name && x.Removed == "" {
			found = append(found, x)
		}
	}
	return found, nil
}

// ManyNamed is the refusal of several live clusters named name.
func ManyNamed(name string, found []Cluster) error {
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = x.ID
	}
	return fmt.Errorf("rancher: %d clusters are named %q (%s); refusing to guess which is this cluster's: delete the extra ones in Rancher", len(found), name, strings.Join(ids, ", "))
}

// Cluster reads one cluster; nil when it does not exist.
func (c *Client) Cluster(ctx context.Context, id string) (*Cluster, error) {
	var x Cluster
	err := c.do(ctx, http.MethodGet, "/v3/clusters/"+url.PathEscape(id), nil, nil, &x)
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &x, nil
}

// CreateCluster makes an import cluster named name, marked as talosc's
// for the cluster of identity. A create whose answer was lost is settled
// (seam.go, "A late create"): Rancher keeps working on it, so the name
// and marker are looked for during the late window before the create is
// sent once more. A NotUnique answer is a create of this cluster that was
// applied all the same, when the cluster of that name carries the marker.
func (c *Client) CreateCluster(ctx context.Context, name, identity string) (*Cluster, error) {
	body := map[string]any{
		"type": "cluster", "name": name,
		"labels": map[string]string{ManagedByLabel: ManagedBy}, "annotations": map[string]string{IdentityAnnotation: identity},
	}
	own := func(ctx context.Context) ([]Cluster, error) {
		all, err := c.ClustersNamed(ctx, name)
		return slices.DeleteFunc(all, func(x Cluster) bool { return !x.MarkedFor(identity) }), err
	}
	var err error
	for range createAttempts {
		var x Cluster
		if err = c.do(ctx, http.MethodPost, "/v3/clusters", nil, body, &x); err == nil {
			return &x, nil
		}
		if !OutcomeUnknown(err) && !IsNotUnique(err) {
			return nil, err
		}
		window := time.Duration(0)
		if OutcomeUnknown(err) {
			window = provider.LateWindow(c.timeout)
		}
		found, ferr := provider.AwaitLate(ctx, window, own)
		switch {
		case ferr != nil:
			return nil, errors.Join(err, ferr)
		case len(found) > 0:
			return &found[0], nil
		case IsNotUnique(err):
			return nil, fmt.Errorf("%w: a cluster named %q, or so but for case, exists in Rancher without talosc's marker for this cluster; rename one of them", err, name)
		}
		c.logf("rancher: create cluster %s: %v; Rancher did not make it within %s: creating it again", name, err, window)
	}
	return nil, err
}

// createAttempts bounds the creates of one cluster whose answers are lost.
const createAttempts = 2

// DeleteCluster deletes a cluster; one already gone is done.
func (c *Client) DeleteCluster(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/v3/clusters/"+url.PathEscape(id), nil, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// WaitBacking polls the cluster every poll, for up to budget, until its
// BackingNamespaceCreated condition is "True" (RA-3): registration tokens
// live in that namespace.
func (c *Client) WaitBacking(ctx context.Context, id string, budget, poll time.Duration) error {
	deadline := time.Now().Add(budget)
	pause := ctxwait.NewBackoff(poll)
	for {
		x, err := c.Cluster(ctx, id)
		switch {
		case err != nil:
			return err
		case x == nil:
			return fmt.Errorf("rancher: cluster %s disappeared while its namespace was being made", id)
		case x.Condition("BackingNamespaceCreated") == "True":
			return nil
		case !time.Now().Before(deadline):
			return fmt.Errorf("rancher: cluster %s: BackingNamespaceCreated is still %q after %s", id, x.Condition("BackingNamespaceCreated"), budget)
		}
		if err := ctxwait.Sleep(ctx, min(pause.Next(), time.Until(deadline))); err != nil {
			return err
		}
	}
}
