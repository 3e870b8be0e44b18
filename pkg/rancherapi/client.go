// Package rancherapi is the slice of Rancher's v3 (norman) API the rancher
// plugin uses, written against what Rancher's own source does
// (docs/plugins.md §2, which corrects the reference): clusters
// looked up by ?name= and filtered again here, an import whose registration
// token's commands a controller fills later, the principals search of the
// token's auth provider, cluster role template bindings, and Rancher's error
// bodies (RA-11).
//
// Every request carries the bearer token, verifies the server's certificate
// (the system roots, or Options.CAPEM), and is bounded by Options.Timeout
// (RA-2: 60 s). Reads and deletes are repeated after a transient failure;
// a POST only when it provably never arrived (provider.RetryTransport):
// after a lost answer the caller looks for what the POST would have made.
package rancherapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/provider"
)

// DefaultTimeout bounds one request (RA-2).
const DefaultTimeout = 60 * time.Second

// retries is how often a transient failure of a repeatable request is
// tried again.
const retries = 3

// Options configure a Client.
type Options struct {
	// URL is Rancher's base URL (rancher.url).
	URL string
	// Token is the API token, "token-xxxxx:yyyy" (rancher.token).
	Token string
	// CAPEM, when set, is the only CA the server's certificate may chain
	// to (rancher.ca_file); nil means the system roots.
	CAPEM []byte
	// Timeout bounds one request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Logf is told about retries.
	Logf func(format string, args ...any)
}

// Client talks to one Rancher server.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	// timeout bounds one request (Options.Timeout); the late window of a
	// lost create is derived from it.
	timeout time.Duration
	logf    func(format string, args ...any)
}

// New returns a client; it does not touch the network.
func New(o Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(strings.TrimSpace(o.URL), "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("rancher.url %q is not a URL", o.URL)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // the stdlib's default transport
	if len(o.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return nil, errors.New("rancher.ca_file holds no PEM certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &Client{base: base, token: o.Token, timeout: o.Timeout, logf: o.Logf, http: &http.Client{
		Transport: &provider.RetryTransport{
			Next: tr, Retries: retries, Timeout: o.Timeout, UploadTimeout: o.Timeout, Logf: o.Logf, Name: "rancher",
			RedactPath: redactImportURL,
		},
		CheckRedirect: sameOrigin,
	}}, nil
}

// sameOrigin refuses a redirect to another scheme or host: the client
// would send the token there again, in clear after an https→http one
// (I-C1). Rancher's API does not redirect the calls made here; a
// redirect within the server is followed, up to 10 as net/http does.
func sameOrigin(req *http.Request, via []*http.Request) error {
	from := via[0].URL
	if req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("%s://%s redirects to %s://%s; refusing to follow it, the token would go there too: "+
			"set rancher.url to the address Rancher serves its API on", from.Scheme, from.Host, req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// do sends one API request (body nil: none) and decodes a 2xx answer into
// out (nil: ignored); any other answer is an *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return &Error{Method: method, Path: path, Cause: err, Unknown: true}
	}
	if resp.StatusCode/100 != 2 {
		return errorOf(method, path, resp.StatusCode, raw)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Cause: fmt.Errorf("the answer is not the JSON expected: %w", err)}
	}
	return nil
}

// transportError is a request that got no HTTP answer: a refused
// certificate says so, with the fix; anything else may have reached
// Rancher (Unknown unless it was never sent).
func (c *Client) transportError(method, path string, err error) error {
	if _, untrusted := errors.AsType[*tls.CertificateVerificationError](err); untrusted {
		return &Error{Method: method, Path: path, Cause: fmt.Errorf("%s presents a certificate that is not trusted, so the token was not sent: %w; "+
			"set rancher.ca_file to the CA bundle that signed it, or add that CA to the system trust store", c.base, redactURLError(err))}
	}
	return &Error{Method: method, Path: path, Cause: redactURLError(err), Unknown: provider.OutcomeUnknown(0, err)}
}

// redactURLError hides an import token in the URL net/http's *url.Error
// prints ("Get \"https://…/v3/import/<token>_c-x.yaml\": …"), keeping
// what it wraps, so that neither the error nor any it wraps shows it.
func redactURLError(err error) error {
	ue, ok := errors.AsType[*url.Error](err)
	if !ok {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactImportURL(ue.URL), Err: ue.Err}
}

// Fetch GETs an absolute URL of this server without the token (the
// import manifest, whose URL carries its own secret) and returns the body.
func (c *Client) Fetch(ctx context.Context, raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host != c.base.Host || u.Scheme != c.base.Scheme {
		return nil, fmt.Errorf("rancher: the manifest URL %q is not on %s; refusing to fetch it", redactImportURL(raw), c.base)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(http.MethodGet, "/v3/import/…", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rancher: GET %s: %s: %s", redactImportURL(raw), resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// redactImportURL hides the registration token of an import URL.
func redactImportURL(raw string) string {
	head, rest, ok := strings.Cut(raw, "/v3/import/")
	if !ok {
		return raw
	}
	if _, cluster, ok := strings.Cut(rest, "_"); ok {
		return head + "/v3/import/<token>_" + cluster
	}
	return head + "/v3/import/<token>"
}
