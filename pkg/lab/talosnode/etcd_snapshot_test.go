package talosnode_test

import (
	"context"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/role"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/lab/talosnode/talosnodetest"
)

// TestEtcdSnapshotAndStatus: a running control plane streams the real
// etcd the lab hands it (Options.EtcdEndpoint), its sha256 trailer
// included, also through another node's apid and to os:etcd:backup, also
// without quorum (etcd serves Snapshot without a leader), and reports its
// member's status from it; a worker, a reader, a stopped node and a node
// that left etcd are refused as Talos refuses them; the lab's faults apply
// to a snapshot as to a read, never late.
func TestEtcdSnapshotAndStatus(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	endpoint := startEtcd(t, fx.vip)
	put(t, endpoint, "/lab/marker", "real etcd")
	inj := labnet.NewInjector(labnet.Knobs{})
	l := newLab(t, fx, talosnode.Options{Injector: inj, EtcdEndpoint: func(*talosnode.Cluster) string { return endpoint }})
	l.bootstrapped()
	c1 := l.client(cp(1))

	snap := snapshot(t, c1, ctx(t, 10*time.Second))
	if !snap.Keys["/lab/marker"] || snap.Status.Revision < 2 {
		t.Fatalf("snapshot of cp-01: revision %d, keys %v; want the etcd's /lab/marker", snap.Status.Revision, snap.Keys)
	}
	cp2 := client.WithNode(ctx(t, 10*time.Second), fx.addrs[cp(2)].String())
	if snap := snapshot(t, c1, cp2); !snap.Keys["/lab/marker"] {
		t.Fatalf("snapshot of cp-02 through cp-01: keys %v", snap.Keys)
	}
	if snap := snapshot(t, l.clientAs(cp(1), role.EtcdBackup), ctx(t, 10*time.Second)); !snap.Keys["/lab/marker"] {
		t.Fatalf("snapshot as os:etcd:backup: keys %v", snap.Keys)
	}

	ids, err := members(t, c1)
	if err != nil {
		t.Fatal(err)
	}
	checkEtcdStatus(t, l.clientAs(cp(1), role.EtcdBackup), ids[cp(1)], ids)

	for _, tc := range []struct {
		what string
		c    *client.Client
		code codes.Code
		msg  string
	}{
		{"a worker", l.client(worker), codes.Unimplemented, "etcd snapshot is only available on control plane nodes"},
		{"os:reader", l.clientAs(cp(1), role.Reader), codes.PermissionDenied, "not authorized"},
	} {
		if err := snapshotErr(tc.c, ctx(t, 2*time.Second)); status.Code(err) != tc.code || !contains(err, tc.msg) {
			t.Errorf("snapshot from %s: %v, want %s %q", tc.what, err, tc.code, tc.msg)
		}
		if tc.code == codes.Unimplemented {
			if _, err := tc.c.EtcdStatus(ctx(t, 2*time.Second)); status.Code(err) != tc.code || !contains(err, "etcd status is only available on control plane nodes") {
				t.Errorf("status from %s: %v, want %s", tc.what, err, tc.code)
			}
		}
	}

	checkSnapshotFaults(t, l, inj, c1)

	// cp-03 leaves etcd: its etcd stops, Talos's local client gives up.
	c3 := l.client(cp(3))
	if err := c3.EtcdLeaveCluster(ctx(t, 2*time.Second), &machine.EtcdLeaveClusterRequest{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = snapshotErr(c3, ctx(t, 5*time.Second))
	if status.Code(err) != codes.DeadlineExceeded || !contains(err, "failed to create etcd client: error building etcd client: context deadline exceeded") {
		t.Fatalf("snapshot from a node that left etcd: %v", err)
	}
	if took := time.Since(start); took < fastTiming().EtcdDial {
		t.Errorf("the local etcd client gave up after %s, before its dial timeout %s", took, fastTiming().EtcdDial)
	}
	if _, err := c3.EtcdStatus(ctx(t, 5*time.Second)); status.Code(err) != codes.DeadlineExceeded || !contains(err, "failed to create etcd client") {
		t.Fatalf("status from a node that left etcd: %v", err)
	}

	// cp-02 off: cp-01 alone of two voters has no quorum, yet serves its data.
	l.nodes[cp(2)].PowerOff()
	if l.nodes[cp(1)].Cluster().Quorum() {
		t.Fatal("quorum with 1 of 2 members up")
	}
	if snap := snapshot(t, c1, ctx(t, 10*time.Second)); !snap.Keys["/lab/marker"] {
		t.Fatalf("snapshot without quorum: keys %v", snap.Keys)
	}
	checkEtcdStatus(t, c1, ids[cp(1)], nil)
	if err := snapshotErr(c1, client.WithNode(ctx(t, 2*time.Second), fx.addrs[cp(2)].String())); status.Code(err) != codes.Unavailable {
		t.Fatalf("snapshot of a stopped node: %v, want Unavailable", err)
	}
}

// checkEtcdStatus: the member's status has its id, the real etcd's
// database size and indexes, and a leader among leaders (none when nil).
func checkEtcdStatus(t *testing.T, c *client.Client, id uint64, leaders map[string]uint64) {
	t.Helper()
	resp, err := c.EtcdStatus(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("etcd status: %v", err)
	}
	st := resp.GetMessages()[0].GetMemberStatus()
	if st.GetMemberId() != id || st.GetDbSize() <= 0 || st.GetDbSizeInUse() <= 0 || st.GetRaftIndex() == 0 || st.GetProtocolVersion() == "" {
		t.Errorf("etcd status %v: want member %d and the real etcd's size, index and version", st, id)
	}
	ok := st.GetLeader() == 0
	if leaders != nil {
		ok = slices.Contains(slices.Collect(maps.Values(leaders)), st.GetLeader())
	}
	if !ok {
		t.Errorf("etcd status: leader %d, want one of %v (none when empty)", st.GetLeader(), leaders)
	}
}

// checkSnapshotFaults: a 503 fails the call before it runs and is recorded
// as a read; a late fault answers 504 and nothing runs later.
func checkSnapshotFaults(t *testing.T, l *lab, inj *labnet.Injector, c *client.Client) {
	t.Helper()
	path := "/machine.MachineService/EtcdSnapshot?node=" + l.fx.addrs[cp(1)].String()
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: "talos", PathPrefix: path, Status: 503}}})
	if err := snapshotErr(c, ctx(t, 2*time.Second)); status.Code(err) != codes.Unavailable || !contains(err, "injected fault") {
		t.Fatalf("snapshot with a 503: %v", err)
	}
	calls := l.rec.Calls()
	if last := calls[len(calls)-1]; last.Method != "grpc-read" || last.Path != path || last.Status != int(codes.Unavailable) {
		t.Fatalf("recorded %+v, want a read of %s", last, path)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: "talos", PathPrefix: path, Late: true}}})
	if err := snapshotErr(c, ctx(t, 2*time.Second)); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("snapshot with a late fault: %v, want the 504", err)
	}
	if n := inj.Pending(); n != 0 {
		t.Fatalf("%d late requests pending after a late snapshot, want none (a read)", n)
	}
	inj.Set(labnet.Knobs{})
}

// snapshotErr streams a snapshot and returns its error.
func snapshotErr(c *client.Client, ctx context.Context) error {
	rd, err := c.EtcdSnapshot(ctx, &machine.EtcdSnapshotRequest{})
	if err != nil {
		return err
	}
	defer rd.Close()
	_, err = io.Copy(io.Discard, rd)
	return err
}

// snapshot streams a snapshot into a file, as talosctl etcd snapshot
// does, and reads it.
func snapshot(t *testing.T, c *client.Client, ctx context.Context) talosnodetest.Snapshot {
	t.Helper()
	rd, err := c.EtcdSnapshot(ctx, &machine.EtcdSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	path := filepath.Join(t.TempDir(), "db.snapshot")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rd); err != nil {
		t.Fatalf("snapshot stream: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := talosnodetest.ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// startEtcd runs a real single-member etcd on host at free ports, as the
// lab's kube-apiserver helper embeds one, and returns its client URL.
func startEtcd(t *testing.T, host netip.Addr) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client := url.URL{Scheme: "http", Host: freePort(t, host)}
	peer := url.URL{Scheme: "http", Host: freePort(t, host)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30s")
	}
	return client.String()
}

// freePort is a free TCP address on host.
func freePort(t *testing.T, host netip.Addr) string {
	t.Helper()
	l, err := labnet.Listen(t.Context(), net.JoinHostPort(host.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return net.JoinHostPort(host.String(), strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// put writes key through etcd's API.
func put(t *testing.T, endpoint, key, value string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Context: t.Context(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx(t, 5*time.Second), key, value); err != nil {
		t.Fatal(err)
	}
}
