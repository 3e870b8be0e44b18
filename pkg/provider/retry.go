package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// RetryTransport bounds every attempt of a request by timeout (a streamed
// upload, whose body cannot be replayed, by uploadTimeout) and retries
// attempts that failed transiently, by the rule of the provider seam
// (seam.go, "Repeating a request"):
//
//   - an idempotent method (GET, HEAD, OPTIONS, PUT, DELETE), or a request
//     Replayable says is safe to repeat, is retried on 502, 503 and 504, on
//     500 when RetryInternalErrors, on a timed-out attempt and on any other
//     transport error;
//   - a non-idempotent one (POST, PATCH) only when it provably did not
//     reach the service: the connection was never made (refused, or the
//     dial failed), or the service or its load balancer answered 503,
//     which both OpenStack's APIs and Proxmox's pveproxy send before acting.
//     A 502, a 504, a reset connection or a timed-out attempt leave the
//     outcome unknown: the answer is returned, and the caller finds out
//     whether the request happened (see OutcomeUnknown) instead of
//     repeating it blindly.
//
// A request whose body cannot be replayed (a streamed image upload) gets
// one attempt. Backoff is jittered, 250 ms doubling to 4 s. The caller's
// own context ends everything.
type RetryTransport struct {
	// Next sends the requests.
	Next http.RoundTripper
	// Retries is how many times a transient failure is retried.
	Retries int
	// Timeout bounds each attempt.
	Timeout time.Duration
	// UploadTimeout bounds a streamed upload (a boot image of a GB or more).
	UploadTimeout time.Duration
	// Logf is told about every retry ("<name>: GET /path: 503 ...; retrying").
	Logf func(format string, args ...any)
	// Name prefixes the retry messages ("openstack", "proxmox").
	Name string
	// RetryInternalErrors retries idempotent requests answered 500 too
	// (OpenStack's services mean a transient fault by it; Proxmox answers
	// 500 for ordinary refusals such as "guest agent is not running").
	RetryInternalErrors bool
	// Replayable reports a request of a non-idempotent method that is
	// safe to repeat (Keystone's token POST); nil: none is.
	Replayable func(*http.Request) bool
	// RedactPath rewrites a request path before it is logged, hiding a
	// secret it carries (Rancher's /v3/import/<token>_<id>.yaml); nil
	// logs paths as they are.
	RedactPath func(string) string
}

// RoundTrip sends req, retrying transient failures.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	retries, timeout := t.Retries, t.Timeout
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		retries, timeout = 0, t.UploadTimeout
	}
	backoff := 250 * time.Millisecond
	for attempt := 0; ; attempt++ {
		resp, err := t.attempt(req, attempt, timeout)
		if attempt >= retries || req.Context().Err() != nil || !t.transient(req, resp, err) {
			return resp, err
		}
		what := "no answer"
		if err == nil {
			what = resp.Status
			drain(resp.Body)
		}
		t.Logf("%s: %s %s: %s; retrying (%d of %d)", t.Name, req.Method, t.logPath(req.URL.Path), what, attempt+1, retries)
		pause := backoff/2 + rand.N(backoff/2+1) //nolint:gosec // jitter, not security
		if err := ctxwait.Sleep(req.Context(), pause); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// logPath is path as a retry message may show it.
func (t *RetryTransport) logPath(path string) string {
	if t.RedactPath == nil {
		return path
	}
	return t.RedactPath(path)
}

// attempt sends one try of req under its own timeout, which ends when the
// response body is closed.
func (t *RetryTransport) attempt(req *http.Request, n int, timeout time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	r := req.Clone(ctx)
	if n > 0 && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, err
		}
		r.Body = body
	}
	resp, err := t.Next.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// transient reports a failure of req worth retrying.
func (t *RetryTransport) transient(req *http.Request, resp *http.Response, err error) bool {
	repeatable := Idempotent(req.Method) || (t.Replayable != nil && t.Replayable(req))
	if err != nil {
		return !certificateRefused(err) && (repeatable || neverSent(err))
	}
	switch resp.StatusCode {
	case http.StatusServiceUnavailable:
		return true
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return repeatable
	case http.StatusInternalServerError:
		return repeatable && t.RetryInternalErrors
	}
	return false
}

// Idempotent reports an HTTP method whose repetition changes nothing more
// than its first success did.
func Idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// neverSent reports a transport error that happened before the request
// could be sent: the connection was refused or could not be made, or the
// server's certificate was refused.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") || certificateRefused(err)
}

// certificateRefused reports a TLS handshake that failed because the
// server's certificate did not verify: the request was never sent, and
// asking again gets the same certificate.
func certificateRefused(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

// OutcomeUnknown reports whether a failed non-idempotent request may have
// been applied all the same: err is no HTTP answer at all (a reset, a
// timed-out attempt), or status is a 5xx (a proxy's 502 or 504 after the
// service acted, a 500 after a commit). A 4xx, or a connection never made,
// is a refusal. Pass status 0 when err carries no HTTP status.
func OutcomeUnknown(status int, err error) bool {
	if status != 0 {
		return status >= http.StatusInternalServerError
	}
	return err != nil && !neverSent(err)
}

// cancelBody ends an attempt's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}
