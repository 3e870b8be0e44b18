package openstack

import (
	"crypto/md5" //nolint:gosec // Swift's ETag is the MD5 of the object
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/talosc/talosc/pkg/backup"
)

// strayTerminatorSwift is a Swift that ends its answer to a HEAD of an
// existing container with a stray chunk terminator, as Debian's eventlet
// proxy (2.30) does, measured: "HTTP/1.1 204 No Content ... \r\n\r\n" then
// "0\r\n\r\n". Here the stray comes a moment later, when a client that
// kept the connection has already sent its next request on it.
type strayTerminatorSwift struct {
	mu      sync.Mutex
	objects map[string][]byte
}

func (f *strayTerminatorSwift) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/v1/AUTH_t/c/")
	switch {
	case r.Method == http.MethodHead && r.URL.Path == "/v1/AUTH_t/c":
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nX-Container-Object-Count: 0\r\n\r\n")
		_ = buf.Flush()
		time.Sleep(100 * time.Millisecond)
		_, _ = conn.Write([]byte("0\r\n\r\n"))
		_ = conn.Close()
	case r.Method == http.MethodPut:
		data, _ := io.ReadAll(r.Body)
		if _, ok := f.objects[name]; ok && r.Header.Get("If-None-Match") == "*" {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		f.objects[name] = data
		w.Header().Set("Etag", etag(data))
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		data, ok := f.objects[name]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Etag", etag(data))
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		_, _ = w.Write(data)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func etag(data []byte) string {
	sum := md5.Sum(data) //nolint:gosec // Swift's ETag
	return hex.EncodeToString(sum[:])
}

// The target takes a connection per request (its "Connection: close",
// which the provider's transport turns into req.Close), so the stray
// terminator
// Swift's eventlet proxy sends after a HEAD of an existing container is
// never read as the answer to the next request (a bundle's PUT, which
// would then fail as "malformed HTTP response" after Swift stored it).
func TestSwiftTargetSurvivesAStrayChunkTerminator(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&strayTerminatorSwift{objects: map[string][]byte{}})
	t.Cleanup(srv.Close)
	pc := &gophercloud.ProviderClient{HTTPClient: newHTTPClient(Options{RequestTimeout: 10 * time.Second, UploadTimeout: 10 * time.Second}, true)}
	pc.SetToken("token")
	sc := &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: srv.URL + "/v1/AUTH_t/", ResourceBase: srv.URL + "/v1/AUTH_t/"}
	target := NewSwiftTarget(sc, "c", "c")
	at := time.Date(2026, 12, 6, 6, 15, 0, 0, time.UTC)
	for i := range 3 {
		tm := at.Add(time.Duration(i) * time.Hour)
		rec := backup.Record{Name: backup.Name("c", tm), Meta: backup.Meta{Format: backup.Format, Cluster: "c", Time: tm}}
		if err := target.Put(t.Context(), rec, strings.NewReader("bundle")); err != nil {
			t.Fatalf("Put %s: %v", rec.Name, err)
		}
	}
}
