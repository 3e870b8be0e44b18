package rancherapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAuditFetchLeaksToken (I-C2): a manifest fetch answered 503, then
// hung past its bound, logs a retry and fails; the import URL's
// registration token is in no log line, and in neither the error nor any
// error it wraps.
func TestAuditFetchLeaksToken(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		select { // hang past the attempt's bound
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer srv.Close()
	var mu sync.Mutex
	var logs []string
	c, err := New(Options{URL: srv.URL, Token: "t", Timeout: 300 * time.Millisecond, Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "SECRETREGTOKEN0123456789abcdefSECRET"
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = c.Fetch(ctx, srv.URL+"/v3/import/"+secret+"_c-abcde.yaml")
	if err == nil {
		t.Fatal("the fetch succeeded; want a failure after the hang")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logs) == 0 {
		t.Fatal("no retry was logged; the 503 should have been retried")
	}
	for _, l := range logs {
		if strings.Contains(l, secret) {
			t.Errorf("retry log carries the registration token: %s", l)
		}
	}
	for _, e := range chain(err) {
		if strings.Contains(e.Error(), secret) {
			t.Errorf("error %T carries the registration token: %v", e, e)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v lost its cause", err)
	}
	if !strings.Contains(err.Error(), "/v3/import/<token>_c-abcde.yaml") {
		t.Errorf("error %q does not name the manifest (token redacted)", err)
	}
}

// chain is err and every error it wraps, depth first.
func chain(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) { //nolint:errorlint // walking the chain by hand
	case interface{ Unwrap() error }:
		out = append(out, chain(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, chain(e)...)
		}
	}
	return out
}
