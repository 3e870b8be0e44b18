// Package kube is the Kubernetes API as the nodes phase uses it, through
// client-go: probing whether the cluster is up (the only input to "needs
// bootstrap", I-3), reading its version, nodes and control-plane static
// pods, waiting for nodes to be Ready, the day-2 node operations (cordon,
// drain, uncordon, delete) and the server-side apply of bootstrap
// manifests.
//
// Every request is bounded by Options.Timeout (kubectl's
// --request-timeout=10s, I-X1), and its error names the request ("kube list
// nodes: timed out after 10s").
//
// The client is client-go's REST client over a scheme of only the groups
// used here (core/v1, policy/v1; other objects travel as JSON or
// unstructured), not a kubernetes.Clientset: the
// Clientset's scheme registers every API group and links all of k8s.io/api
// (about 15 MB of every binary that imports this package).
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// The reference's bounds (spec §3.1 steps 5 and 15, I-3, I-13, I-X1, I-X2).
const (
	// DefaultTimeout bounds one request.
	DefaultTimeout = 10 * time.Second
	// DefaultRetryInterval is the pause between ServerVersion attempts.
	DefaultRetryInterval = 10 * time.Second
	// ProbeAttempts and ProbeInterval are the reference's Probe.
	ProbeAttempts = 3
	ProbeInterval = 10 * time.Second
	// versionAttempts is how often ServerVersion asks (I-13).
	versionAttempts = 3
	// ReadyBudget and ReadyPoll are the reference's WaitReady.
	ReadyBudget = 900 * time.Second
	ReadyPoll   = 15 * time.Second
)

// Options tune a Client. Zero fields take the defaults above.
type Options struct {
	// Timeout bounds every request.
	Timeout time.Duration
	// RetryInterval is the pause between ServerVersion attempts.
	RetryInterval time.Duration
}

// Client is a Kubernetes API client from a kubeconfig.
type Client struct {
	// core is a REST client for the core group (/api/v1); evictions
	// (policy/v1) are its pods' subresource.
	core   rest.Interface
	params runtime.ParameterCodec
	opts   Options
	server string
	// base is the kubeconfig's REST configuration (see RESTConfig).
	base *rest.Config
	// disc caches Apply's API discovery.
	disc discovery
}

// Server is the API server URL the client talks to.
func (c *Client) Server() string { return c.server }

// Load returns a client for the current context of the kubeconfig file at
// path (relative file references resolved against it).
func Load(path string, o Options) (*Client, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	c, err := fromConfig(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return c, nil
}

// LoadContext returns a client for context kubeContext ("" for the current
// one) of the kubeconfig file at path, or of the default kubeconfig
// ($KUBECONFIG, else ~/.kube/config) when path is "", as kubectl
// --kubeconfig/--context choose.
func LoadContext(path, kubeContext string, o Options) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	what := "the default kubeconfig"
	if path != "" {
		what = "kubeconfig " + path
	}
	cfg, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if kubeContext != "" {
		if _, ok := cfg.Contexts[kubeContext]; !ok {
			return nil, fmt.Errorf("%s has no context %q", what, kubeContext)
		}
		cfg.CurrentContext = kubeContext
	}
	c, err := fromConfig(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// FromBytes returns a client for the current context of a kubeconfig (as
// Talos's Kubeconfig call returns it).
func FromBytes(kubeconfig []byte, o Options) (*Client, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := fromConfig(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return c, nil
}

func fromConfig(cfg *clientcmdapi.Config, o Options) (*Client, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	rc.Timeout = o.Timeout
	// No client-side rate limit: talosc's polls are few and paced, and a
	// limiter wait must never eat a request's budget.
	rc.QPS = -1
	base := rest.CopyConfig(rc)
	core, params, err := coreClient(rc)
	if err != nil {
		return nil, err
	}
	return &Client{core: core, params: params, opts: o, server: rc.Host, base: base}, nil
}

// RESTConfig returns a copy of the client's REST configuration (the
// kubeconfig's, with the request timeout and no client-side rate limit),
// for clients built elsewhere: go-kubernetes' upgrade.NewChecks makes its
// dynamic client from it.
func (c *Client) RESTConfig() *rest.Config { return rest.CopyConfig(c.base) }

// coreClient is a REST client for /api/v1, configured as client-go's
// generated core/v1 client configures itself but with a scheme of only the
// types used here instead of client-go's all-groups one.
func coreClient(rc *rest.Config) (rest.Interface, runtime.ParameterCodec, error) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := policyv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	rc.APIPath = "/api"
	rc.GroupVersion = &corev1.SchemeGroupVersion
	rc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	if rc.UserAgent == "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	core, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, nil, err
	}
	return core, runtime.NewParameterCodec(scheme), nil
}

// request runs one bounded request, naming it in its error.
// idempotentAttempts bounds the tries of a request whose repetition
// changes nothing.
const idempotentAttempts = 4

// idempotent is request for a request whose repetition changes nothing (a
// read, a patch to a fixed value, a delete, a server-side apply): a
// transient failure (the API unavailable or overloaded, as when the API
// VIP moves during a control plane's reboot, or an answer lost) is tried
// again, Options.RetryInterval apart.
func (c *Client) idempotent(ctx context.Context, what string, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		var raw error
		err := c.request(ctx, what, func(ctx context.Context) error {
			raw = fn(ctx)
			return raw
		})
		if err == nil || attempt == idempotentAttempts || ctx.Err() != nil || !transient(raw) {
			return err
		}
		if serr := ctxwait.Sleep(ctx, c.opts.RetryInterval); serr != nil {
			return err
		}
	}
}

// transient reports a failure that says nothing about the request: the
// API answered 429, 502, 503 or 504, or did not answer at all.
func transient(err error) bool {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		switch se.Status().Code {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

func (c *Client) request(ctx context.Context, what string, fn func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err := fn(rctx)
	if err == nil {
		return nil
	}
	var ne net.Error
	if ctx.Err() == nil && (rctx.Err() != nil || errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("kube %s: timed out after %s", what, c.opts.Timeout)
	}
	return fmt.Errorf("kube %s: %w", what, err)
}
