package factory_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/imagefactory/imagefactorytest"
	"github.com/talosc/talosc/pkg/talos/factory"
)

const testVersion = "v1.14.1"

// imageBytes returns n deterministic bytes and their hex SHA-256.
func imageBytes(n int) ([]byte, string) {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// imagePath is the request path of the test image.
func imagePath(artifact string) string {
	return "/image/" + baseID + "/" + testVersion + "/" + artifact
}

func TestDownload_OK(t *testing.T) {
	t.Parallel()
	data, sum := imageBytes(600 << 10) // several read chunks
	f := imagefactorytest.NewServer(t)
	f.AddImage(baseID, testVersion, factory.ArtifactOpenStack, data)
	tests := []struct {
		name       string
		expectSize int64
		expectSum  string
	}{
		{"size and hash given", int64(len(data)), sum},
		{"upper-case hash accepted", int64(len(data)), string(bytes.ToUpper([]byte(sum)))},
		{"size and hash unknown", -1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var last [2]int64
			calls := 0
			c := newClient(t, f.URL, f.Client(), factory.Options{Progress: func(done, total int64) {
				calls++
				last = [2]int64{done, total}
			}})
			var dst bytes.Buffer
			n, got, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, &dst, tc.expectSize, tc.expectSum)
			if err != nil {
				t.Fatalf("Download: %v", err)
			}
			if n != int64(len(data)) || got != sum || !bytes.Equal(dst.Bytes(), data) {
				t.Errorf("Download = %d bytes, sum %s; want %d bytes, sum %s (content equal: %v)",
					n, got, len(data), sum, bytes.Equal(dst.Bytes(), data))
			}
			if calls < 2 || last != [2]int64{int64(len(data)), int64(len(data))} {
				t.Errorf("progress: %d calls, last %v", calls, last)
			}
		})
	}
}

func TestDownload_FollowsRedirectWithIdentityEncoding(t *testing.T) {
	t.Parallel()
	data, sum := imageBytes(1000)
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cdn/blob" {
			http.Redirect(w, r, "/cdn/blob", http.StatusFound)
			return
		}
		if ae := r.Header.Get("Accept-Encoding"); ae != "identity" {
			t.Errorf("Accept-Encoding = %q, want identity", ae)
		}
		_, _ = w.Write(data)
	})
	c := newClient(t, srv.URL, srv.Client(), factory.Options{})
	var dst bytes.Buffer
	if _, got, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactNoCloudISO, &dst, 1000, sum); err != nil || got != sum {
		t.Fatalf("Download = %s, %v", got, err)
	}
}

// rawServer answers every request with raw bytes and closes the connection,
// so a test can send a response net/http's server would refuse to produce.
func rawServer(t *testing.T, raw string) string {
	t.Helper()
	srv := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString(raw)
		_ = buf.Flush()
	})
	return srv.URL
}

func TestDownload_TruncatedRefused(t *testing.T) {
	t.Parallel()
	const body = "0123456789"
	lying := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"+body)
	noLength := rawServer(t, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"+body)
	chunked := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(body))
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // close the connection mid-body
	})
	tests := []struct {
		name       string
		url        string
		expectSize int64
		want       string
	}{
		{"content-length lies, connection closed early", lying, -1, "truncated: connection closed after 10 of 100 bytes: unexpected EOF"},
		{"chunked body cut off", chunked.URL, -1, "truncated: connection closed after 10 bytes: unexpected EOF"},
		{"chunked body cut off, size known", chunked.URL, 100, "truncated: connection closed after 10 of 100 bytes"},
		{"no length, short body, size known", noLength, 100, "received 10 bytes, expected 100 (truncated or wrong image)"},
		{"announced length differs from expected", lying, 99, "server announces 100 bytes, expected 99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, tc.url, nil, factory.Options{})
			var dst bytes.Buffer
			_, sum, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, &dst, tc.expectSize, "")
			wantErr(t, err, "download "+tc.url+imagePath(factory.ArtifactOpenStack)+": "+tc.want)
			if sum != "" {
				t.Errorf("sum = %q on error", sum)
			}
		})
	}
}

func TestDownload_HashMismatchRefused(t *testing.T) {
	t.Parallel()
	data, sum := imageBytes(4096)
	f := imagefactorytest.NewServer(t)
	f.AddImage(baseID, testVersion, factory.ArtifactOpenStack, data)
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	_, want := imageBytes(4095)
	n, got, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, &bytes.Buffer{}, -1, want)
	wantErr(t, err, "sha256 "+sum+", expected "+want)
	if n != 4096 || got != "" {
		t.Errorf("Download = %d, %q; want 4096, empty sum", n, got)
	}
}

func TestDownload_HTTPErrors(t *testing.T) {
	t.Parallel()
	f := imagefactorytest.NewServer(t)
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	_, _, err := c.Download(t.Context(), baseID, "v9.9.9", factory.ArtifactOpenStack, &bytes.Buffer{}, -1, "")
	url := f.URL + "/image/" + baseID + "/v9.9.9/" + factory.ArtifactOpenStack
	wantErr(t, err, "download: GET "+url+": 404 Not Found: image "+baseID+"/v9.9.9/openstack-amd64.raw.xz not found")
	var he *factory.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusNotFound {
		t.Errorf("error %v: want *HTTPError 404", err)
	}

	srv := fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "failed to build image: out of disk", http.StatusInternalServerError)
	})
	c = newClient(t, srv.URL, srv.Client(), factory.Options{})
	_, _, err = c.Download(t.Context(), baseID, testVersion, factory.ArtifactNoCloudISO, &bytes.Buffer{}, -1, "")
	wantErr(t, err, "GET "+srv.URL+imagePath(factory.ArtifactNoCloudISO)+": 500 Internal Server Error: failed to build image: out of disk")
}

func TestDownload_TimeoutHonoured(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t, nil)
	c := newClient(t, srv.URL, srv.Client(), factory.Options{DownloadTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, _, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, &bytes.Buffer{}, -1, "")
	wantErr(t, err, "GET "+srv.URL+imagePath(factory.ArtifactOpenStack)+": timed out after 100ms")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Download returned after %s, want about 100ms", d)
	}
}

func TestDownload_StallAborted(t *testing.T) {
	t.Parallel()
	srv := hangingServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte("partial"))
		_ = http.NewResponseController(w).Flush()
	})
	c := newClient(t, srv.URL, srv.Client(), factory.Options{StallTimeout: 100 * time.Millisecond})
	n, _, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, &bytes.Buffer{}, -1, "")
	wantErr(t, err, "after 7 bytes: stalled: no data for 100ms")
	if n != 7 {
		t.Errorf("n = %d, want 7", n)
	}
}

// failingWriter refuses every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDownload_WriteErrorNamed(t *testing.T) {
	t.Parallel()
	data, _ := imageBytes(10)
	f := imagefactorytest.NewServer(t)
	f.AddImage(baseID, testVersion, factory.ArtifactOpenStack, data)
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	_, _, err := c.Download(t.Context(), baseID, testVersion, factory.ArtifactOpenStack, failingWriter{}, -1, "")
	wantErr(t, err, "write after 0 bytes: disk full")
}

func TestDownload_BadArgumentsSendNothing(t *testing.T) {
	t.Parallel()
	f := imagefactorytest.NewServer(t)
	c := newClient(t, f.URL, f.Client(), factory.Options{})
	tests := []struct {
		name, id, version, artifact, sum, want string
	}{
		{"short id", "abc", testVersion, factory.ArtifactOpenStack, "", `schematic id "abc" is not 64 lowercase hex digits`},
		{"version escapes path", baseID, "../x", factory.ArtifactOpenStack, "", `talos version "../x"`},
		{"artifact dot-dot", baseID, testVersion, "..", "", `artifact ".."`},
		{"artifact with slash", baseID, testVersion, "a/b", "", `artifact "a/b"`},
		{"bad expected hash", baseID, testVersion, factory.ArtifactOpenStack, "abc", `expected sha256 "abc" is not 64 hex digits`},
	}
	for _, tc := range tests {
		_, _, err := c.Download(t.Context(), tc.id, tc.version, tc.artifact, &bytes.Buffer{}, -1, tc.sum)
		wantErr(t, err, tc.want)
	}
	if got := f.Requests(); len(got) != 0 {
		t.Errorf("requests sent: %v", got)
	}
}

func TestImageURL(t *testing.T) {
	t.Parallel()
	c := newClient(t, "https://mirror.example:8443/factory/", nil, factory.Options{})
	got, err := c.ImageURL(baseID, "v1.14.1+build.1", factory.ArtifactNoCloudISO)
	if err != nil {
		t.Fatal(err)
	}
	want := "https://mirror.example:8443/factory/image/" + baseID + "/v1.14.1+build.1/nocloud-amd64.iso"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ImageURL (-want +got):\n%s", diff)
	}
}
