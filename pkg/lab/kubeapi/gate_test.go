package kubeapi

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// TestGate_ClosedRefusesAndCuts: a closed gate refuses new connections and
// cuts the ones it had; opened again it serves on the same address.
func TestGate_ClosedRefusesAndCuts(t *testing.T) {
	t.Parallel()
	ln, err := labnet.Listen(t.Context(), "127.40.0.9:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		ReadHeaderTimeout: labnet.ReadHeaderTimeout,
	}
	g := newGate(ln, func(l net.Listener) { _ = srv.Serve(l) })
	t.Cleanup(func() { g.close(); _ = srv.Close() })
	addr := ln.Addr().String()
	dial := func() (net.Conn, error) {
		return labnet.Dialer().DialContext(t.Context(), "tcp", addr)
	}
	get := func(c net.Conn) error {
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return errors.New(resp.Status)
		}
		return nil
	}

	held, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := get(held); err != nil {
		t.Fatalf("open gate: %v", err)
	}
	if err := g.set(false); err != nil {
		t.Fatal(err)
	}
	if err := get(held); err == nil {
		t.Fatal("a connection accepted before the gate closed still answers")
	}
	if c, err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial a closed gate: %v, want connection refused", err)
	}
	if err := g.set(true); err != nil {
		t.Fatal(err)
	}
	again, err := dial()
	if err != nil {
		t.Fatalf("dial the reopened gate: %v", err)
	}
	defer again.Close()
	if err := get(again); err != nil {
		t.Fatalf("reopened gate: %v", err)
	}
}
