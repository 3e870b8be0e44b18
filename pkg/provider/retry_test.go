package provider_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/provider"
)

// answers plays a service: each attempt gets status, or err when set.
type answers struct {
	status int
	err    error
	n      atomic.Int32
}

func (a *answers) RoundTrip(r *http.Request) (*http.Response, error) {
	a.n.Add(1)
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	if a.err != nil {
		return nil, a.err
	}
	return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Body: http.NoBody, Request: r}, nil
}

func transport(next http.RoundTripper, internal bool) *provider.RetryTransport {
	return &provider.RetryTransport{
		Next: next, Retries: 2, Timeout: 5 * time.Second, UploadTimeout: 5 * time.Second, Name: "test",
		Logf: func(string, ...any) {}, RetryInternalErrors: internal,
		Replayable: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/auth/tokens") },
	}
}

var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

// untrusted is a handshake's refusal of the server's certificate, as
// crypto/tls wraps it.
var untrusted = &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}

func TestRetryTransport_RetriesOnlyWhatCannotDuplicate(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	cases := []struct {
		method, path string
		status       int
		err          error
		internal     bool
		attempts     int32
	}{
		{method: "GET", status: 502, attempts: 3},
		{method: "GET", status: 503, attempts: 3},
		{method: "GET", status: 504, attempts: 3},
		{method: "PUT", status: 504, attempts: 3},
		{method: "DELETE", status: 502, attempts: 3},
		{method: "GET", status: 500, internal: true, attempts: 3},
		{method: "GET", status: 500, attempts: 1},
		{method: "GET", status: 404, attempts: 1},
		{method: "GET", err: errReset, attempts: 3},
		{method: "POST", status: 503, attempts: 3},
		{method: "POST", status: 502, attempts: 1},
		{method: "POST", status: 504, attempts: 1},
		{method: "POST", status: 500, internal: true, attempts: 1},
		{method: "POST", status: 409, attempts: 1},
		{method: "PATCH", status: 504, attempts: 1},
		{method: "POST", err: errReset, attempts: 1},
		{method: "POST", err: refused, attempts: 3},
		{method: "POST", path: "/v3/auth/tokens", status: 504, attempts: 3},
		{method: "POST", path: "/v3/auth/tokens", err: errReset, attempts: 3},
		{method: "GET", err: untrusted, attempts: 1},
		{method: "POST", path: "/v3/auth/tokens", err: untrusted, attempts: 1},
	}
	for _, c := range cases {
		what := fmt.Sprint(c.status)
		if c.err != nil {
			what = c.err.Error()
		}
		t.Run(fmt.Sprintf("%s %s %s internal=%v", c.method, c.path, what, c.internal), func(t *testing.T) {
			a := &answers{status: c.status, err: c.err}
			req, err := http.NewRequestWithContext(t.Context(), c.method, "http://127.0.0.1:1"+c.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := transport(a, c.internal).RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			if got := a.n.Load(); got != c.attempts {
				t.Errorf("%d attempts, want %d", got, c.attempts)
			}
		})
	}
}

func TestRetryTransport_NonReplayableBodyGetsOneAttempt(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	// An io.Pipe reader is a body http.NewRequest cannot rewind.
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte("image data")); _ = pw.Close() }()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/file", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := transport(http.DefaultTransport, true).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || hits.Load() != 1 {
		t.Errorf("status %d after %d attempts, want 503 after one", resp.StatusCode, hits.Load())
	}
}

func TestRetryTransport_ARepeatedRequestCarriesItsWholeBody(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if len(bodies) < 3 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/tags", strings.NewReader(`{"tags":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := transport(http.DefaultTransport, false).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if want := []string{`{"tags":["a"]}`, `{"tags":["a"]}`, `{"tags":["a"]}`}; fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Errorf("the service read the bodies %q, want %q", bodies, want)
	}
}

func TestRetryTransport_RefusedConnectionIsRetriedForPOST(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	a := &answers{}
	counting := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		a.n.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v2.0/networks", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := transport(counting, true).RoundTrip(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || a.n.Load() != 3 {
		t.Errorf("err %v after %d attempts, want a refused connection after 3", err, a.n.Load())
	}
	if provider.OutcomeUnknown(0, err) {
		t.Error("a refused connection reads as an unknown outcome")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOutcomeUnknown(t *testing.T) {
	cases := []struct {
		status int
		err    error
		want   bool
	}{
		{status: 502, want: true},
		{status: 504, want: true},
		{status: 500, want: true},
		{status: 503, want: true},
		{status: 409, want: false},
		{status: 400, want: false},
		{err: errReset, want: true},
		{err: errors.New("context deadline exceeded"), want: true},
		{err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("no route")}, want: false},
		{err: syscall.ECONNREFUSED, want: false},
		{err: fmt.Errorf("post: %w", untrusted), want: false},
	}
	for _, c := range cases {
		if got := provider.OutcomeUnknown(c.status, c.err); got != c.want {
			t.Errorf("OutcomeUnknown(%d, %v) = %v, want %v", c.status, c.err, got, c.want)
		}
	}
}
