// Package imagefactorytest runs the lab's Image Factory (pkg/lab/imagefactory)
// for a test: POST /schematics (ids computed like the real factory),
// GET /versions and GET /image/<id>/<version>/<artifact>. Requests no route
// serves fail the test.
package imagefactorytest

import (
	"net/http"
	"testing"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
)

// Server is the lab Image Factory, started for one test.
type Server struct {
	*imagefactory.Factory
}

// NewServer starts a factory listing versions (GET /versions) on 127.0.0.1
// and stops it when the test ends.
func NewServer(tb testing.TB, versions ...string) *Server {
	tb.Helper()
	f, err := imagefactory.Start(tb.Context(), imagefactory.Options{Versions: versions})
	if err != nil {
		tb.Fatal(err)
	}
	f.OnUnhandled(func(method, path string) { tb.Errorf("imagefactorytest: unhandled request %s %s", method, path) })
	tb.Cleanup(func() { _ = f.Close() })
	return &Server{Factory: f}
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return &http.Client{} }

// Requests returns "METHOD /path" for every request received, in order.
func (s *Server) Requests() []string {
	calls := s.Recorder().Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Method + " " + c.Path
	}
	return out
}
