// Package releases finds the Kubernetes releases a Talos cluster can run:
// the versions Sidero Labs published a kubelet image for (what talosctl
// upgrade-k8s installs), read from the image registry's tags list through
// the OCI distribution API, with the anonymous bearer-token handshake
// registries such as ghcr.io ask for.
package releases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
)

// DefaultKubeletRepository is where Sidero Labs publishes the kubelet
// images Talos runs.
const DefaultKubeletRepository = config.DefaultKubeletRepository

// DefaultTimeout bounds each request.
const DefaultTimeout = 30 * time.Second

// maxPages bounds the tags-list pages followed.
const maxPages = 50

// maxBody caps a response body.
const maxBody = 4 << 20

// KubernetesVersions lists the release versions ("v1.35.4") tagged in the
// kubelet image repository at repository ("https://host/path"): tags that
// are not plain releases (prereleases, "latest", digests) are left out.
func KubernetesVersions(ctx context.Context, client *http.Client, repository string) ([]string, error) {
	repo, err := url.Parse(repository)
	if err != nil || (repo.Scheme != "https" && repo.Scheme != "http") || repo.Host == "" {
		return nil, fmt.Errorf("kubelet repository %q: want https://host/path", repository)
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTimeout}
	}
	r := &registry{client: client, base: &url.URL{Scheme: repo.Scheme, Host: repo.Host}}
	next := r.base.JoinPath("v2", strings.Trim(repo.Path, "/"), "tags", "list")
	next.RawQuery = "n=1000"
	var out []string
	for page := 0; next != nil; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("kubelet tags at %s: more than %d pages", repository, maxPages)
		}
		var list struct {
			Tags []string `json:"tags"`
		}
		if next, err = r.get(ctx, next, &list); err != nil {
			return nil, fmt.Errorf("kubelet tags at %s: %w", repository, err)
		}
		for _, t := range list.Tags {
			if v, err := config.ParseVersion(t); err == nil && v.Suffix == "" {
				out = append(out, v.String())
			}
		}
	}
	return out, nil
}

// registry reads one registry, fetching an anonymous token once asked.
type registry struct {
	client *http.Client
	base   *url.URL
	token  string
}

// get GETs u into v and returns the next page from the Link header. A
// first 401 is answered with an anonymous token, once.
func (r *registry) get(ctx context.Context, u *url.URL, v any) (*url.URL, error) {
	for {
		resp, err := r.do(ctx, u) //nolint:bodyclose // read drains and closes it
		if err != nil {
			return nil, err
		}
		next, retry, err := r.read(ctx, u, resp, v)
		if !retry {
			return next, err
		}
	}
}

// read consumes one response; retry asks for the request again with the
// token it fetched.
func (r *registry) read(ctx context.Context, u *url.URL, resp *http.Response, v any) (next *url.URL, retry bool, err error) {
	defer drain(resp)
	if resp.StatusCode == http.StatusUnauthorized && r.token == "" {
		if r.token, err = r.fetchToken(ctx, resp.Header.Get("WWW-Authenticate")); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(v); err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return r.nextPage(resp.Header.Get("Link")), false, nil
}

func (r *registry) do(ctx context.Context, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return resp, nil
}

// fetchToken answers a Bearer challenge with an anonymous token.
func (r *registry) fetchToken(ctx context.Context, challenge string) (string, error) {
	scheme, params, ok := strings.Cut(challenge, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("registry asks for %q authentication; only anonymous bearer tokens are supported", scheme)
	}
	p := parseParams(params)
	realm, err := url.Parse(p["realm"])
	if err != nil || realm.Host == "" {
		return "", fmt.Errorf("registry token realm %q is not a URL", p["realm"])
	}
	q := realm.Query()
	for _, k := range []string{"service", "scope"} {
		if p[k] != "" {
			q.Set(k, p[k])
		}
	}
	realm.RawQuery = q.Encode()
	resp, err := r.do(ctx, realm)
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("anonymous registry token from %s: %s", realm.Redacted(), resp.Status)
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&tok); err != nil {
		return "", fmt.Errorf("anonymous registry token from %s: %w", realm.Redacted(), err)
	}
	if t := tok.Token + tok.AccessToken; t != "" {
		return t, nil
	}
	return "", errors.New("the registry's token endpoint returned no token")
}

// parseParams parses `k="v",k2="v2"` challenge parameters.
func parseParams(s string) map[string]string {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			out[strings.ToLower(k)] = strings.Trim(v, `"`)
		}
	}
	return out
}

// nextPage resolves a `<...>; rel="next"` Link header against the registry.
func (r *registry) nextPage(link string) *url.URL {
	target, rest, ok := strings.Cut(link, ";")
	if !ok || !strings.Contains(rest, `rel="next"`) {
		return nil
	}
	u, err := r.base.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
	if err != nil || u.Host != r.base.Host {
		return nil
	}
	return u
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	_ = resp.Body.Close()
}
