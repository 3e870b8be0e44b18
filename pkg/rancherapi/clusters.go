package rancherapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
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

// FindCluster returns the live cluster named name, if any. It asks with
// ?name= (norman ignores ?filter=name=, which lists every cluster) and
// filters the rows again by exact name, leaving out clusters being
// removed; more than one is an error (RA-2).
func (c *Client) FindCluster(ctx context.Context, name string) (*Cluster, error) {
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
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	ids := make([]string, len(found))
	for i, x := range found {
		ids[i] = x.ID
	}
	return nil, fmt.Errorf("rancher: %d clusters are named %q (%s); refusing to guess which is this cluster's: delete the extra ones in Rancher", len(found), name, strings.Join(ids, ", "))
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
// for the cluster of identity. An answer lost after Rancher may have made
// it is settled by looking the name up again, and a NotUnique answer to a
// retry of a create that did happen likewise.
func (c *Client) CreateCluster(ctx context.Context, name, identity string) (*Cluster, error) {
	var x Cluster
	body := map[string]any{
		"type": "cluster", "name": name,
		"labels": map[string]string{ManagedByLabel: ManagedBy}, "annotations": map[string]string{IdentityAnnotation: identity},
	}
	err := c.do(ctx, http.MethodPost, "/v3/clusters", nil, body, &x)
	if err == nil {
		return &x, nil
	}
	if !OutcomeUnknown(err) {
		if IsNotUnique(err) {
			return nil, fmt.Errorf("%w: a cluster whose name differs from %q only in case exists in Rancher; rename one of them", err, name)
		}
		return nil, err
	}
	found, ferr := c.FindCluster(ctx, name)
	if ferr != nil || found == nil {
		return nil, errors.Join(err, ferr)
	}
	return found, nil
}

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
