package rancherapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/talosc/talosc/pkg/provider"
)

// Principal is a user or group as the token's auth provider knows it.
type Principal struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	LoginName     string `json:"loginName"`
	PrincipalType string `json:"principalType"`
	Provider      string `json:"provider"`
}

// SearchUsers runs the principals search for user principals matching
// name, as the provider of the token's user answers it
// (R@v2.11.3:pkg/auth/providers/providers.go:215-237): a prefix or
// substring search on most, the text echoed back on SAML and OIDC.
func (c *Client) SearchUsers(ctx context.Context, name string) ([]Principal, error) {
	var list collection[Principal]
	err := c.do(ctx, http.MethodPost, "/v3/principals", url.Values{"action": {"search"}},
		map[string]any{"name": name, "principalType": "user"}, &list)
	return list.Data, err
}

// Binding is a cluster role template binding.
type Binding struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	ClusterID        string            `json:"clusterId"`
	RoleTemplateID   string            `json:"roleTemplateId"`
	UserPrincipalID  string            `json:"userPrincipalId"`
	GroupPrincipalID string            `json:"groupPrincipalId"`
	UserID           string            `json:"userId"`
	Labels           map[string]string `json:"labels"`
	Annotations      map[string]string `json:"annotations"`
}

// Bindings lists the cluster's role template bindings.
func (c *Client) Bindings(ctx context.Context, clusterID string) ([]Binding, error) {
	var list collection[Binding]
	err := c.do(ctx, http.MethodGet, "/v3/clusterroletemplatebindings", url.Values{"clusterId": {clusterID}}, nil, &list)
	return list.Data, err
}

// Bind gives the user principal role on the cluster. Rancher 2.8–2.14
// keep two identical bindings side by side, so a create whose answer was
// lost is settled (seam.go, "A late create"): the cluster's bindings are
// looked through for this principal and role during the late window, and
// only then is the binding asked for once more. A duplicate that appears
// all the same is redundant, and the next reconcile removes it (RA-7).
func (c *Client) Bind(ctx context.Context, clusterID, principal, role string) error {
	body := map[string]any{"type": "clusterRoleTemplateBinding", "clusterId": clusterID, "userPrincipalId": principal, "roleTemplateId": role}
	same := func(ctx context.Context) ([]Binding, error) {
		list, err := c.Bindings(ctx, clusterID)
		return slices.DeleteFunc(list, func(b Binding) bool { return b.UserPrincipalID != principal || b.RoleTemplateID != role }), err
	}
	var err error
	for range createAttempts {
		err = c.do(ctx, http.MethodPost, "/v3/clusterroletemplatebindings", nil, body, nil)
		if err == nil || !OutcomeUnknown(err) {
			return err
		}
		found, lerr := provider.AwaitLate(ctx, provider.LateWindow(c.timeout), same)
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		if len(found) > 0 {
			return nil
		}
		c.logf("rancher: bind %s as %s: %v; Rancher did not make it: asking again", principal, role, err)
	}
	return err
}

// Unbind deletes a binding; one already gone is done.
func (c *Client) Unbind(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/v3/clusterroletemplatebindings/"+url.PathEscape(id), nil, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}
