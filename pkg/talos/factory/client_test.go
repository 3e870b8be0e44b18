package factory_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/imagefactory/imagefactorytest"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// newClient returns a client for url with short test timeouts.
func newClient(t *testing.T, url string, hc *http.Client, opts factory.Options) *factory.Client {
	t.Helper()
	opts.HTTPClient = hc
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.DownloadTimeout == 0 {
		opts.DownloadTimeout = 5 * time.Second
	}
	c, err := factory.New(url, opts)
	if err != nil {
		t.Fatalf("New(%q): %v", url, err)
	}
	return c
}

// fakeServer starts an httptest server on 127.0.0.1 with one handler.
func fakeServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// hangingServer starts a server whose handler reads the request and then
// never answers; it returns when the client disconnects or the test ends
// (that cleanup runs before srv.Close, which waits for handlers).
func hangingServer(t *testing.T, before func(http.ResponseWriter)) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		// Go's server notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		if before != nil {
			before(w)
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	t.Cleanup(func() {
		// Release handlers blocked on a body the client never finished
		// sending, so srv.Close (registered earlier, run later) cannot hang.
		close(done)
		srv.CloseClientConnections()
	})
	return srv
}

// wantErr fails unless err is non-nil and contains every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("error = nil, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func TestCreateSchematic_MatchesFactoryID(t *testing.T) {
	t.Parallel()
	f := imagefactorytest.NewServer(t)
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	for _, s := range []factory.Schematic{factory.BaseSchematic(), factory.SchematicFor(nil)} {
		want, err := s.ID()
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CreateSchematic(t.Context(), s)
		if err != nil {
			t.Fatalf("CreateSchematic: %v", err)
		}
		if got != want {
			t.Errorf("CreateSchematic = %s, want %s", got, want)
		}
	}
	if _, ok := f.Schematics()[baseID]; !ok {
		t.Errorf("factory did not record the base schematic: %v", f.Schematics())
	}
	want := []string{"POST /schematics", "POST /schematics"}
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestCreateSchematic_SendsYAML(t *testing.T) {
	t.Parallel()
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/yaml" {
			t.Errorf("Content-Type = %q", ct)
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"` + baseID + `"}`))
	})
	c := newClient(t, srv.URL+"/", srv.Client(), factory.Options{})
	if _, err := c.CreateSchematic(t.Context(), factory.BaseSchematic()); err != nil {
		t.Fatal(err)
	}
}

func TestCreateSchematic_Refusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr []string
	}{
		{"id mismatch", http.StatusCreated, `{"id":"` + guestAgentID + `"}`, []string{
			"/schematics returned id " + guestAgentID, "talosc computed " + baseID, "check the image factory url",
		}},
		{"no id", http.StatusCreated, `{}`, []string{"response has no id"}},
		{"not json", http.StatusOK, `<html>hello</html>`, []string{"decode response", "<html>hello</html>"}},
		{"bad request", http.StatusBadRequest, "invalid schematic: unknown extension\n", []string{
			"POST http://127.0.0.1:", "/schematics: 400 Bad Request: invalid schematic: unknown extension",
		}},
		{"server error", http.StatusInternalServerError, "boom", []string{"500 Internal Server Error: boom"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			c := newClient(t, srv.URL, srv.Client(), factory.Options{})
			id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
			wantErr(t, err, append([]string{"create schematic [siderolabs/qemu-guest-agent siderolabs/tailscale]"}, tc.wantErr...)...)
			if id != "" {
				t.Errorf("id = %q on error", id)
			}
		})
	}
}

func TestCreateSchematic_HTTPErrorIsTyped(t *testing.T) {
	t.Parallel()
	srv := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, strings.Repeat("x", 4000), http.StatusServiceUnavailable)
	})
	c := newClient(t, srv.URL, srv.Client(), factory.Options{})
	_, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
	var he *factory.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not an *HTTPError", err)
	}
	if he.StatusCode != http.StatusServiceUnavailable || he.Method != http.MethodPost || len(he.Body) != 512 {
		t.Errorf("HTTPError = {%d %s body %d bytes}, want {503 POST 512 bytes}", he.StatusCode, he.Method, len(he.Body))
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	f := imagefactorytest.NewServer(t, "v1.13.0", "v1.14.1")
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	got, err := c.Versions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1.13.0", "v1.14.1"}, got); diff != "" {
		t.Errorf("Versions (-want +got):\n%s", diff)
	}
}

func TestVersions_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{"not found", http.StatusNotFound, "404 page not found", "/versions: 404 Not Found: 404 page not found"},
		{"server error", http.StatusInternalServerError, "registry\n\tunavailable", "/versions: 500 Internal Server Error: registry unavailable"},
		{"wrong shape", http.StatusOK, `{"versions":[]}`, "decode response"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			c := newClient(t, srv.URL, srv.Client(), factory.Options{})
			_, err := c.Versions(t.Context())
			wantErr(t, err, "list talos versions: GET "+srv.URL, tc.wantErr)
		})
	}
}

func TestAPICall_TimeoutHonoured(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t, nil)
	c := newClient(t, srv.URL, srv.Client(), factory.Options{Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.Versions(t.Context())
	wantErr(t, err, "GET "+srv.URL+"/versions: timed out after 100ms")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Versions returned after %s, want about 100ms", d)
	}
}

func TestAPICall_CallerCancel(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t, nil)
	c := newClient(t, srv.URL, srv.Client(), factory.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.CreateSchematic(ctx, factory.BaseSchematic())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestNew_RefusesBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "factory.talos.dev", "unix:///tmp/x", "https://f.example/?a=b"} {
		if _, err := factory.New(u, factory.Options{}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	c, err := factory.New(factory.DefaultBaseURL+"/", factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != factory.DefaultBaseURL || c.RegistryHost() != "factory.talos.dev" {
		t.Errorf("BaseURL/RegistryHost = %q, %q", c.BaseURL(), c.RegistryHost())
	}
}
