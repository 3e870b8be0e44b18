package labnettest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
)

// UntrustedTLS starts a loopback TLS server for h whose certificate comes
// from httptest's own CA, which no trust store holds, and closes it when
// the test ends. The handshakes clients refuse are not logged.
// srv.Client() trusts it; srv.Certificate() is the CA for a bundle.
func UntrustedTLS(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv
}
