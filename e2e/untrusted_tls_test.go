package e2e

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"

	"github.com/rogpeppe/go-internal/testscript"
)

// untrustedKey holds a script's untrusted HTTPS server.
type untrustedKey struct{}

// untrustedServer is an HTTPS server on loopback whose certificate no
// client trusts (httptest's own CA, given to nobody). requests counts the
// requests that got past the TLS handshake.
type untrustedServer struct {
	srv      *httptest.Server
	requests atomic.Int64
}

// cmdUntrustedTLS runs "untrusted-tls VAR", which starts an untrusted
// server and sets VAR to its https:// URL, and "untrusted-tls requests N",
// which checks that N requests reached it (0: every client refused its
// certificate before sending one).
func cmdUntrustedTLS(ts *testscript.TestScript, neg bool, args []string) {
	holder, _ := ts.Value(untrustedKey{}).(*atomic.Pointer[untrustedServer])
	if neg || holder == nil || len(args) != 1 && (len(args) != 2 || args[0] != "requests") {
		ts.Fatalf("usage: untrusted-tls VAR | untrusted-tls requests N")
	}
	if len(args) == 2 {
		u := holder.Load()
		if u == nil {
			ts.Fatalf("untrusted-tls requests: no server (untrusted-tls VAR first)")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		if got := u.requests.Load(); got != int64(want) {
			ts.Fatalf("%d request(s) reached the untrusted server, want %d", got, want)
		}
		return
	}
	u := &untrustedServer{}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		u.requests.Add(1)
		http.Error(w, "an impostor answered", http.StatusInternalServerError)
	}))
	ts.Defer(u.srv.Close)
	holder.Store(u)
	ts.Setenv(args[0], u.srv.URL)
}
