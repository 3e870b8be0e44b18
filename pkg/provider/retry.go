package provider

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"syscall"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// RetryTransport bounds every attempt of a request by timeout (a streamed
// upload, whose body cannot be replayed, by uploadTimeout) and retries
// attempts that failed transiently: any method on 502, 503 and 504 (the
// request did not reach the service) or a refused connection; idempotent
// methods (GET, HEAD, PUT, DELETE) also on 500, on a timed-out attempt and
// on other transport errors. A request whose body cannot be replayed (a
// streamed image upload) gets one attempt. Backoff is jittered, 250 ms
// doubling to 4 s. The caller's own context ends everything.
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
		if attempt >= retries || req.Context().Err() != nil || !t.transient(req.Method, resp, err) {
			return resp, err
		}
		what := "no answer"
		if err == nil {
			what = resp.Status
			drain(resp.Body)
		}
		t.Logf("%s: %s %s: %s; retrying (%d of %d)", t.Name, req.Method, req.URL.Path, what, attempt+1, retries)
		pause := backoff/2 + rand.N(backoff/2+1) //nolint:gosec // jitter, not security
		if err := ctxwait.Sleep(req.Context(), pause); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, 4*time.Second)
	}
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

// transient reports a failure worth retrying for method.
func (t *RetryTransport) transient(method string, resp *http.Response, err error) bool {
	idempotent := method == http.MethodGet || method == http.MethodHead || method == http.MethodPut || method == http.MethodDelete
	if err != nil {
		return idempotent || errors.Is(err, syscall.ECONNREFUSED)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusInternalServerError:
		return idempotent && t.RetryInternalErrors
	}
	return false
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
