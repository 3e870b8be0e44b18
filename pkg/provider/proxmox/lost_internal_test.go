package proxmox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	goproxmox "github.com/luthermonson/go-proxmox"
)

// Which failures may hide an applied request, and which are retried once
// the request is known not to have been applied.
func TestUncertainAndRetryable(t *testing.T) {
	t.Parallel()
	api := func(code int) error {
		return fmt.Errorf("create VM: %w", &goproxmox.APIError{StatusCode: code, Status: fmt.Sprint(code)})
	}
	transport := func(err error) error { return &url.Error{Op: "Post", URL: "https://pve/api2/json/pools", Err: err} }
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name                 string
		ctx                  context.Context
		err                  error
		uncertain, retryable bool
	}{
		{"502", t.Context(), api(http.StatusBadGateway), true, true},
		{"504", t.Context(), api(http.StatusGatewayTimeout), true, true},
		{"reset", t.Context(), transport(syscall.ECONNRESET), true, true},
		{"closed before the answer", t.Context(), transport(io.EOF), true, true},
		{"attempt timed out", t.Context(), transport(context.DeadlineExceeded), true, true},
		{"503: not applied", t.Context(), api(http.StatusServiceUnavailable), false, true},
		{"refused: not applied", t.Context(), transport(syscall.ECONNREFUSED), false, true},
		{"500: an answer", t.Context(), api(http.StatusInternalServerError), false, false},
		{"400: an answer", t.Context(), api(http.StatusBadRequest), false, false},
		{"a failed task", t.Context(), &goproxmox.TaskFailedError{}, false, false},
		{"Ctrl-C", cancelled, transport(context.Canceled), false, false},
		{"502 after Ctrl-C", cancelled, api(http.StatusBadGateway), false, false},
		{"nil", t.Context(), nil, false, false},
		{"other", t.Context(), errors.New("x"), false, false},
	} {
		if got := uncertain(tc.ctx, tc.err); got != tc.uncertain {
			t.Errorf("%s: uncertain %v, want %v", tc.name, got, tc.uncertain)
		}
		if got := retryable(tc.ctx, tc.err); got != tc.retryable {
			t.Errorf("%s: retryable %v, want %v", tc.name, got, tc.retryable)
		}
	}
}
