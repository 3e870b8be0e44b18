package factory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
)

// DefaultBaseURL is the public Image Factory. Callers pass the cluster's
// (config.Cluster.ImageFactoryURL); this package never reads the
// environment.
const DefaultBaseURL = config.DefaultImageFactory

// Defaults for the zero Options fields.
const (
	// DefaultTimeout bounds one API call (create schematic, list versions).
	DefaultTimeout = 30 * time.Second
	// DefaultDownloadTimeout bounds one whole download, including the time
	// the factory takes to build an image it has not cached yet.
	DefaultDownloadTimeout = 30 * time.Minute
	// DefaultStallTimeout aborts a download whose body stops flowing.
	DefaultStallTimeout = 2 * time.Minute
)

// maxJSONBody caps the API responses talosc decodes.
const maxJSONBody = 1 << 20

// maxErrorExcerpt caps the response body quoted in an error.
const maxErrorExcerpt = 512

// userAgent identifies talosc to the factory.
const userAgent = "talosc"

// Options configures a Client. The zero value is usable.
type Options struct {
	// HTTPClient sends the requests; nil means a new client on
	// http.DefaultTransport. Tests inject httptest's client here.
	HTTPClient *http.Client
	// Timeout bounds each API call; 0 means DefaultTimeout.
	Timeout time.Duration
	// DownloadTimeout bounds each Download; 0 means DefaultDownloadTimeout.
	DownloadTimeout time.Duration
	// StallTimeout aborts a Download when no body byte arrives for this
	// long once the response has started; 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// Progress, when set, is called after every chunk a Download writes
	// with the bytes written so far and the expected total (-1 if unknown).
	Progress func(done, total int64)
}

// Client talks to one Image Factory over HTTP. It is safe for concurrent use.
type Client struct {
	base     *url.URL
	http     *http.Client
	timeout  time.Duration
	download time.Duration
	stall    time.Duration
	progress func(done, total int64)
}

// New returns a client for the Image Factory at baseURL
// (e.g. DefaultBaseURL); a path prefix is kept, a trailing slash dropped.
func New(baseURL string, opts Options) (*Client, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:     u,
		http:     opts.HTTPClient,
		timeout:  orDefault(opts.Timeout, DefaultTimeout),
		download: orDefault(opts.DownloadTimeout, DefaultDownloadTimeout),
		stall:    orDefault(opts.StallTimeout, DefaultStallTimeout),
		progress: opts.Progress,
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// ForCluster returns a client of cfg's Image Factory (talos.image_factory)
// whose downloads report progress through progress (nil: silent).
func ForCluster(cfg *config.Cluster, progress func(done, total int64)) (*Client, error) {
	u := cfg.ImageFactoryURL()
	c, err := New(u, Options{Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("image factory %s (talos.image_factory): %w", u, err)
	}
	return c, nil
}

// orDefault returns d unless it is zero or negative.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// BaseURL returns the factory's base URL without a trailing slash.
func (c *Client) BaseURL() string {
	return c.base.String()
}

// RegistryHost returns the host installer references use, see RegistryHost.
func (c *Client) RegistryHost() string {
	return c.base.Host
}

// HTTPError is a response with an unexpected status.
type HTTPError struct {
	// Method and URL identify the request.
	Method, URL string
	// StatusCode is the HTTP status code.
	StatusCode int
	// Status is the status line text, e.g. "404 Not Found".
	Status string
	// Body is the start of the response body, cleaned for printing.
	Body string
}

// Error implements error.
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: %s", e.Method, e.URL, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// CreateSchematic registers s with the factory (POST /schematics with the
// schematic's YAML) and returns its id. The factory's id must equal the id
// computed locally: a different id means the factory serialises schematics
// differently and installer references talosc computed offline would be wrong.
func (c *Client) CreateSchematic(ctx context.Context, s Schematic) (string, error) {
	want, err := s.ID()
	if err != nil {
		return "", err
	}
	body, err := s.Marshal()
	if err != nil {
		return "", err
	}
	var resp struct {
		ID string `json:"id"`
	}
	u := c.endpoint("schematics")
	if err := c.call(ctx, http.MethodPost, u, body, &resp); err != nil {
		return "", fmt.Errorf("create schematic %v: %w", s.extensions, err)
	}
	switch resp.ID {
	case want:
		return want, nil
	case "":
		return "", fmt.Errorf("create schematic %v: POST %s: response has no id", s.extensions, u)
	}
	return "", fmt.Errorf("create schematic %v: POST %s returned id %s but talosc computed %s; "+
		"the factory serialises schematics differently (check the image factory url)", s.extensions, u, resp.ID, want)
}

// Versions lists the Talos versions the factory can build (GET /versions).
func (c *Client) Versions(ctx context.Context) ([]string, error) {
	var versions []string
	if err := c.call(ctx, http.MethodGet, c.endpoint("versions"), nil, &versions); err != nil {
		return nil, fmt.Errorf("list talos versions: %w", err)
	}
	return versions, nil
}

// endpoint joins path segments onto the base URL.
func (c *Client) endpoint(segments ...string) string {
	return c.base.JoinPath(segments...).String()
}

// apiAttempts is how many times an API call is sent when its answer is a
// transient failure.
const apiAttempts = 4

// call sends an API request and decodes the JSON response into out,
// asking again (up to apiAttempts times, backing off) after a transient
// failure: no answer, a reset, a timed-out attempt, 429, 502, 503 or 504.
// Both API calls are idempotent, a lost answer included: GET /versions
// reads, and POST /schematics is content-addressed (the same schematic
// always gets the same id, registered once).
func (c *Client) call(ctx context.Context, method, u string, body []byte, out any) error {
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.callOnce(ctx, method, u, body, out)
		if err == nil || attempt == apiAttempts || ctx.Err() != nil || !transient(err) {
			return err
		}
		if err := ctxwait.Sleep(ctx, pause); err != nil {
			return err
		}
		pause *= 2
	}
}

// transient reports a failed attempt worth another: anything but an answer
// that is not 429, 502, 503 or 504 (an error answer decides; so does a
// response that cannot be decoded).
func transient(err error) bool {
	if he, ok := errors.AsType[*HTTPError](err); ok {
		switch he.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return errors.Is(err, errNoAnswer)
}

// errNoAnswer marks an attempt that got no (whole) answer.
var errNoAnswer = errors.New("no answer")

// callOnce sends one API request bounded by the client's timeout and
// decodes the JSON response into out. A non-nil body is sent as YAML.
func (c *Client) callOnce(ctx context.Context, method, u string, body []byte, out any) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout,
		fmt.Errorf("timed out after %s: %w", c.timeout, context.DeadlineExceeded))
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w (%w)", requestError(ctx, method, u, err), errNoAnswer)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(method, u, resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody+1))
	if err != nil {
		return fmt.Errorf("%w (%w)", requestError(ctx, method, u, err), errNoAnswer)
	}
	if len(data) > maxJSONBody {
		return fmt.Errorf("%s %s: response larger than %d bytes", method, u, maxJSONBody)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response %q: %w", method, u, excerpt(data), err)
	}
	return nil
}

// requestError names the request and, when ctx ended, why (its cause says
// which bound expired) instead of a bare "context deadline exceeded".
func requestError(ctx context.Context, method, u string, err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err // *url.Error repeats method and URL
	}
	if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	return fmt.Errorf("%s %s: %w", method, u, err)
}

// statusError reads the start of an error response into an *HTTPError.
func statusError(method, u string, resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorExcerpt))
	return &HTTPError{Method: method, URL: u, StatusCode: resp.StatusCode, Status: resp.Status, Body: excerpt(data)}
}

// excerpt makes a response body fit for an error message: valid UTF-8,
// whitespace runs collapsed, control characters dropped, at most
// maxErrorExcerpt bytes.
func excerpt(data []byte) string {
	if len(data) > maxErrorExcerpt {
		data = data[:maxErrorExcerpt]
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "?")), " ")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}
