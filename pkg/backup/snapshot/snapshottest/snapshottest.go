// Package snapshottest takes real etcd snapshots for tests: an embedded
// etcd on loopback, some keys put, and the Snapshot RPC's stream (sha256
// trailer included) saved to a file, as Talos's EtcdSnapshot streams it.
package snapshottest

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Take starts an embedded etcd in a temporary directory on free loopback
// ports, puts keys, saves a snapshot through clientv3.Maintenance.Snapshot
// to a file in tb.TempDir() and returns its path. etcd is stopped before
// Take returns.
func Take(tb testing.TB, keys map[string]string) string {
	tb.Helper()
	e := start(tb)
	defer e.Close()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.Clients[0].Addr().String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcd client: %v", err)
	}
	defer func() { _ = cli.Close() }()
	for k, v := range keys {
		if _, err := cli.Put(tb.Context(), k, v); err != nil {
			tb.Fatalf("put %s: %v", k, err)
		}
	}
	rc, err := cli.Snapshot(tb.Context())
	if err != nil {
		tb.Fatalf("etcd snapshot: %v", err)
	}
	defer func() { _ = rc.Close() }()
	path := filepath.Join(tb.TempDir(), "etcd.snapshot")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		tb.Fatalf("etcd snapshot stream: %v", err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Endpoint starts an embedded etcd, stopped when tb ends, and returns its
// client URL (what the lab's Options.EtcdEndpoint hands a cluster).
func Endpoint(tb testing.TB) string {
	tb.Helper()
	e := start(tb)
	tb.Cleanup(e.Close)
	return "http://" + e.Clients[0].Addr().String()
}

// start runs a single-member etcd; a port taken between choosing and
// binding it is retried on new ports.
func start(tb testing.TB) *embed.Etcd {
	tb.Helper()
	var err error
	for range 3 {
		cfg := embed.NewConfig()
		cfg.Dir = filepath.Join(tb.TempDir(), "etcd")
		cfg.LogLevel = "fatal" // Close logs every closed listener as an error
		client, peer := freeURL(tb), freeURL(tb)
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.Name + "=" + peer.String()
		var e *embed.Etcd
		if e, err = embed.StartEtcd(cfg); err != nil {
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
			return e
		case <-time.After(60 * time.Second):
			e.Close()
			tb.Fatal("embedded etcd not ready after 60s")
		}
	}
	tb.Fatalf("start embedded etcd: %v", err)
	return nil
}

// freeURL is an http URL on a loopback port free a moment ago.
func freeURL(tb testing.TB) url.URL {
	tb.Helper()
	l, err := (&net.ListenConfig{}).Listen(tb.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

// Keys is a small data set for Take: n keys under /registry/test/.
func Keys(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("/registry/test/key-%03d", i)] = fmt.Sprintf("value %d", i)
	}
	return m
}
