package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
)

// retries is how often a transient failure (a 502/503/504, a refused
// connection, a timed-out read) is retried.
const retries = 4

// Defaults for Options.
const (
	DefaultRequestTimeout = 60 * time.Second
	// DefaultTaskTimeout bounds a Proxmox task (VM create, ISO download:
	// the reference's 600 s).
	DefaultTaskTimeout = 10 * time.Minute
	// DefaultPoll is the interval between task and status reads.
	DefaultPoll = 2 * time.Second
	// DefaultWait bounds waits for a state (a VM stopped, an address
	// reported by the guest agent).
	DefaultWait = 10 * time.Minute
)

// Options tune a Cloud; the zero value is the reference's budgets.
type Options struct {
	// RequestTimeout bounds every API request (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	// TaskTimeout bounds every task (0: DefaultTaskTimeout).
	TaskTimeout time.Duration
	// Poll is the task/status polling interval (0: DefaultPoll).
	Poll time.Duration
	// Wait bounds waits for a state (0: DefaultWait).
	Wait time.Duration
	// Logf receives warnings and progress; nil discards them.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.TaskTimeout <= 0 {
		o.TaskTimeout = DefaultTaskTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Cloud is a Proxmox VE API session. It is safe for concurrent use.
type Cloud struct {
	opts Options
	url  string
	// cluster is the configuration the Cloud was opened for.
	cluster *config.Cluster
	client  *goproxmox.Client
	// hc and base send what go-proxmox cannot bound by a context (upload.go).
	hc   *http.Client
	base string
	// pre caches Preflight's Environment (preflight.go).
	pre preflightCache
	// configs caches the VM configs read in this run (vmconfig.go).
	configs configCache
	// dups are the unused second VMs of a name the inventory found
	// (dedupe.go).
	dups lateDups
}

var _ provider.Cloud = (*Cloud)(nil)

// minTaskTimeout is the least a scaled task timeout becomes: a real
// task (a VM create) takes seconds whatever the run's time scale.
const minTaskTimeout = time.Minute

// Connector is the Proxmox provider.Connector: Connect with the default
// budgets scaled by the run.
func Connector(ctx context.Context, cfg *config.Cluster, o provider.ConnectOptions) (provider.Cloud, error) {
	c, err := Connect(ctx, cfg, Options{
		Wait: o.Scale(DefaultWait), Poll: o.Scale(DefaultPoll),
		TaskTimeout: max(o.Scale(DefaultTaskTimeout), minTaskTimeout), Logf: o.Logf,
		RequestTimeout: o.RequestTimeout(DefaultRequestTimeout),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Connect opens a session with cfg.Proxmox's API token and checks that the
// API answers (its version). Credentials never appear in errors.
func Connect(ctx context.Context, cfg *config.Cluster, o Options) (*Cloud, error) {
	px := cfg.Proxmox
	if px == nil {
		return nil, errors.New("proxmox: cluster.yaml has no proxmox section")
	}
	if px.TokenID == "" || px.TokenSecret == "" {
		return nil, errors.New("proxmox: proxmox.token_id and proxmox.token_secret must be set (normally in secrets.yaml)")
	}
	o = o.withDefaults()
	hc, err := httpClient(px.TLSVerify, cfg.Dir, o)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(px.URL, "/"), "/api2/json") + "/api2/json"
	c := &Cloud{opts: o, url: px.URL, cluster: cfg, hc: hc, base: base, client: goproxmox.NewClient(base,
		goproxmox.WithHTTPClient(hc),
		goproxmox.WithAPIToken(string(px.TokenID), string(px.TokenSecret)),
		goproxmox.WithUserAgent("talosc"),
	)}
	vctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	if _, err := c.client.Version(vctx); err != nil {
		if _, untrusted := errors.AsType[*tls.CertificateVerificationError](err); untrusted {
			return nil, fmt.Errorf("proxmox: %s presents a certificate that is not trusted, so the API token was not sent: %w; "+
				"set proxmox.tls_verify to the path of the CA bundle that signed it (Proxmox's pve-root-ca.pem), or add that CA to the system trust store", px.URL, err)
		}
		return nil, fmt.Errorf("proxmox: %s does not answer with the API token (proxmox.token_id): %w", px.URL, err)
	}
	return c, nil
}

// httpClient verifies the API certificate as tls_verify says: the system
// roots (true), nothing (false) or a CA bundle file (relative to the
// cluster directory dir); every attempt is bounded and transient failures
// are retried (provider.RetryTransport; an ISO upload gets the task
// timeout and one attempt).
func httpClient(v config.TLSVerify, dir string, o Options) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // the stdlib's default transport
	switch {
	case v.Insecure:
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // tls_verify: false, the user's choice
	case v.CABundle != "":
		path := v.CABundle
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("proxmox.tls_verify: read the CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxmox.tls_verify: %s holds no PEM certificate", v.CABundle)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{CheckRedirect: refuseRedirect, Transport: &provider.RetryTransport{
		Next: tr, Retries: retries, Timeout: o.RequestTimeout, UploadTimeout: o.TaskTimeout, Logf: o.Logf, Name: "proxmox",
	}}, nil
}

// refuseRedirect refuses every redirect. The Proxmox API never redirects,
// and following one would send the API token (Authorization) again to
// wherever it points: in clear when that is http:// on the same host,
// which Go's client does not strip it for.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("refusing to follow a redirect to %s: the Proxmox API never redirects, and following it would send the API token there; set proxmox.url to the API's own https address", req.URL.Redacted())
}

// wait waits for task within the task timeout, its status read after
// pauses that back off from ctxwait.FirstPoll to Options.Poll (a task of
// the lab ends in milliseconds, an ISO download in minutes). go-proxmox
// counts a task ending "WARNINGS: N" as a success, as Proxmox does
// (reference §5.3); any other non-OK ending is an error naming what the
// task did.
func (c *Cloud) wait(ctx context.Context, what string, task *goproxmox.Task) error {
	deadline := time.Now().Add(c.opts.TaskTimeout)
	pause := ctxwait.NewBackoff(c.opts.Poll)
	for {
		// One status read, then ErrTimeout after the pause: go-proxmox
		// still decides what a finished task's status means.
		d := max(min(pause.Next(), time.Until(deadline)), time.Millisecond)
		err := task.Wait(ctx, d, d)
		if err == nil {
			return nil
		}
		if !errors.Is(err, goproxmox.ErrTimeout) || !time.Now().Before(deadline) {
			return fmt.Errorf("%s (task %s): %w", what, task.UPID, err)
		}
	}
}

// Project is "" on Proxmox.
func (c *Cloud) Project() string { return "" }

// MachineKind is KindVM.
func (c *Cloud) MachineKind() string { return KindVM }
