package factory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// downloadChunk is the read size of Download.
const downloadChunk = 256 << 10

// ImageURL returns the URL of a boot artifact,
// <base>/image/<schematic id>/<talos version>/<artifact>, for downloads that
// happen elsewhere (Proxmox fetches its ISO itself through download-url).
func (c *Client) ImageURL(schematicID, talosVersion, artifact string) (string, error) {
	if err := checkImagePath(schematicID, talosVersion, artifact); err != nil {
		return "", err
	}
	return c.endpoint("image", schematicID, talosVersion, artifact), nil
}

// Download streams a boot artifact (GET /image/<id>/<version>/<artifact>)
// into dst and returns the byte count and the hex SHA-256 of what it wrote.
// A truncated body is an error: fewer bytes than the announced
// Content-Length, a connection closed mid-body, or (when expectSize >= 0) a
// size other than expectSize. A non-empty expectSHA256 must match. On error
// dst may hold a partial image; the caller discards it. The whole download
// is bounded by Options.DownloadTimeout and aborted when the body stalls
// for Options.StallTimeout.
func (c *Client) Download(ctx context.Context, schematicID, talosVersion, artifact string,
	dst io.Writer, expectSize int64, expectSHA256 string,
) (int64, string, error) {
	u, err := c.ImageURL(schematicID, talosVersion, artifact)
	if err != nil {
		return 0, "", err
	}
	expectSHA256 = strings.ToLower(expectSHA256)
	if expectSHA256 != "" && (len(expectSHA256) != sha256.Size*2 || !isHex(expectSHA256)) {
		return 0, "", fmt.Errorf("download %s: expected sha256 %q is not 64 hex digits", u, expectSHA256)
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, c.download,
		fmt.Errorf("timed out after %s: %w", c.download, context.DeadlineExceeded))
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	resp, err := c.get(ctx, u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	announced := resp.ContentLength
	if announced >= 0 && expectSize >= 0 && announced != expectSize {
		return 0, "", fmt.Errorf("download %s: server announces %d bytes, expected %d", u, announced, expectSize)
	}
	total := announced
	if total < 0 {
		total = expectSize
	}
	s := &stream{dst: dst, total: total, progress: c.progress}
	// The stall watchdog starts with the response: building an uncached
	// image before the first byte is bounded by the download timeout only.
	watchdog := time.AfterFunc(c.stall, func() {
		cancel(fmt.Errorf("stalled: no data for %s: %w", c.stall, context.DeadlineExceeded))
	})
	defer watchdog.Stop()
	n, sum, err := s.copy(resp.Body, func() { watchdog.Reset(c.stall) })
	if err != nil {
		return n, "", fmt.Errorf("download %s: %w", u, s.explain(ctx, err))
	}
	if err := checkReceived(u, n, sum, announced, expectSize, expectSHA256); err != nil {
		return n, "", err
	}
	return n, sum, nil
}

// get sends the download's GET request for u and returns the response
// when it is 200 OK.
func (c *Client) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	// Identity encoding keeps Content-Length meaningful: Go's transport
	// would otherwise ask for gzip and hide the length.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download: %w", requestError(ctx, http.MethodGet, u, err))
	}
	if resp.StatusCode != http.StatusOK {
		err := statusError(http.MethodGet, u, resp)
		resp.Body.Close()
		return nil, fmt.Errorf("download: %w", err)
	}
	return resp, nil
}

// checkReceived refuses a download of u whose n bytes fall short of the
// announced Content-Length (when announced >= 0), differ from expectSize
// (when >= 0), or whose sha256 sum differs from a non-empty expectSHA256.
func checkReceived(u string, n int64, sum string, announced, expectSize int64, expectSHA256 string) error {
	switch {
	case announced >= 0 && n != announced:
		return fmt.Errorf("download %s: truncated: received %d of %d bytes", u, n, announced)
	case expectSize >= 0 && n != expectSize:
		return fmt.Errorf("download %s: received %d bytes, expected %d (truncated or wrong image)", u, n, expectSize)
	case expectSHA256 != "" && sum != expectSHA256:
		return fmt.Errorf("download %s: sha256 %s, expected %s", u, sum, expectSHA256)
	}
	return nil
}

// stream copies a response body to dst while hashing and counting it.
type stream struct {
	dst      io.Writer
	total    int64
	progress func(done, total int64)
	n        int64
	writeErr bool
}

// copy reads body to EOF, calling alive after every read that returned data.
func (s *stream) copy(body io.Reader, alive func()) (int64, string, error) {
	h := sha256.New()
	buf := make([]byte, downloadChunk)
	for {
		k, err := body.Read(buf)
		if k > 0 {
			alive()
			h.Write(buf[:k])
			if _, werr := s.dst.Write(buf[:k]); werr != nil {
				s.writeErr = true
				return s.n, "", werr
			}
			s.n += int64(k)
			if s.progress != nil {
				s.progress(s.n, s.total)
			}
		}
		if errors.Is(err, io.EOF) {
			return s.n, hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return s.n, "", err
		}
	}
}

// explain turns a copy error into a message that says what happened.
func (s *stream) explain(ctx context.Context, err error) error {
	switch {
	case s.writeErr:
		return fmt.Errorf("write after %d bytes: %w", s.n, err)
	case context.Cause(ctx) != nil:
		return fmt.Errorf("after %d bytes: %w", s.n, context.Cause(ctx))
	case errors.Is(err, io.ErrUnexpectedEOF) && s.total >= 0:
		return fmt.Errorf("truncated: connection closed after %d of %d bytes: %w", s.n, s.total, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated: connection closed after %d bytes: %w", s.n, err)
	}
	return fmt.Errorf("read after %d bytes: %w", s.n, err)
}

// checkImagePath refuses path segments that would leave the image's URL.
func checkImagePath(schematicID, talosVersion, artifact string) error {
	if len(schematicID) != sha256.Size*2 || !isHex(schematicID) {
		return fmt.Errorf("image url: schematic id %q is not 64 lowercase hex digits", schematicID)
	}
	if !isSegment(talosVersion) {
		return fmt.Errorf("image url: talos version %q is not a version like v1.14.1", talosVersion)
	}
	if !isSegment(artifact) {
		return fmt.Errorf("image url: artifact %q is not a file name like %s", artifact, ArtifactOpenStack)
	}
	return nil
}

// isSegment reports whether s is a plain path segment: name characters and
// "+", not "." or "..".
func isSegment(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isNameByte(c) && c != '+' {
			return false
		}
	}
	return true
}
