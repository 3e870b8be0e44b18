package rancherapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// RegistrationToken is a cluster registration token.
type RegistrationToken struct {
	ID          string `json:"id"`
	ClusterID   string `json:"clusterId"`
	Token       string `json:"token"`
	ManifestURL string `json:"manifestUrl"`
	Command     string `json:"command"`
}

// Tokens lists the cluster's registration tokens (Rancher's own
// default-token and system among them).
func (c *Client) Tokens(ctx context.Context, clusterID string) ([]RegistrationToken, error) {
	var list collection[RegistrationToken]
	if err := c.do(ctx, http.MethodGet, "/v3/clusters/"+url.PathEscape(clusterID)+"/clusterregistrationtokens", nil, nil, &list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// HasToken reports whether token is one of the cluster's registration
// tokens: the agent holding it registered with this cluster, whether
// Rancher has redeployed it yet or not (the check Rancher's tunnel makes,
// R@v2.11.3:pkg/tunnelserver/mcmauthorizer/tunnel.go:390-410).
func (c *Client) HasToken(ctx context.Context, clusterID, token string) (bool, error) {
	list, err := c.Tokens(ctx, clusterID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(t RegistrationToken) bool { return t.Token == token }), nil
}

// ManifestURL returns the import manifest's URL of a registration token
// of the cluster: a new token is asked for (a lost answer leaves a spare
// token behind, which is harmless), then the token list is polled, up to
// budget, until a controller has filled its manifestUrl
// (R@v2.11.3:pkg/controllers/dashboard/clusterregistrationtoken/status.go;
// it stays empty while Rancher's server-url setting is unset).
func (c *Client) ManifestURL(ctx context.Context, clusterID string, budget, poll time.Duration) (string, error) {
	var t RegistrationToken
	if err := c.do(ctx, http.MethodPost, "/v3/clusterRegistrationTokens", nil,
		map[string]any{"type": "clusterRegistrationToken", "clusterId": clusterID}, &t); err != nil {
		return "", err
	}
	deadline := time.Now().Add(budget)
	pause := ctxwait.NewBackoff(poll)
	for {
		if t.ManifestURL != "" {
			return t.ManifestURL, nil
		}
		if !time.Now().Before(deadline) {
			return "", fmt.Errorf("rancher: registration token %s of cluster %s has no manifest URL after %s; is Rancher's server-url setting set?", t.ID, clusterID, budget)
		}
		if err := ctxwait.Sleep(ctx, min(pause.Next(), time.Until(deadline))); err != nil {
			return "", err
		}
		list, err := c.Tokens(ctx, clusterID)
		if err != nil {
			return "", err
		}
		if i := slices.IndexFunc(list, func(x RegistrationToken) bool { return x.ID == t.ID }); i >= 0 {
			t = list[i]
		}
	}
}
