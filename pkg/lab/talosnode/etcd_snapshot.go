package talosnode

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// snapshotChunk is the size of the common.Data messages EtcdSnapshot sends
// (Talos's stream chunker reads 1 KiB at a time).
const snapshotChunk = 1024

// EtcdSnapshot streams a snapshot of the cluster's real etcd (the one its
// lab kube-apiserver stores in, Options.EtcdEndpoint) in common.Data
// chunks, as Talos streams its local member's: etcd's maintenance snapshot,
// its sha256 trailer included. Talos reads its local etcd, so:
//   - a worker is refused ("only available on control plane nodes");
//   - a control plane whose etcd does not run (not bootstrapped or joined
//     yet, not started, removed or left) fails once its etcd client gives
//     up dialling (Timing.EtcdDial) with Talos's wording, "failed to create
//     etcd client: error building etcd client: context deadline exceeded",
//     code DeadlineExceeded (gRPC's code of an error wrapping it), whatever
//     the client's own deadline;
//   - a running member of an etcd without quorum still answers: etcd
//     serves Snapshot without a leader (it would be that member's data up
//     to the loss of quorum; here it is the lab's one etcd, up to date).
//
// A read error of the snapshot ends the stream without an error, as
// Talos's chunker does: the client must check the trailer.
func (s *machineServer) EtcdSnapshot(_ *machine.EtcdSnapshotRequest, srv machine.MachineService_EtcdSnapshotServer) error {
	n := s.node
	if _, err := n.requireControlPlane("etcd snapshot"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()
	cli, _, err := n.localEtcd(ctx)
	if err != nil {
		return fmt.Errorf("failed to create etcd client: %w", err)
	}
	defer cli.Close()
	rd, err := cli.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("failed reading etcd snapshot: %w", err)
	}
	defer rd.Close()
	buf := make([]byte, snapshotChunk)
	for {
		k, err := rd.Read(buf)
		if k > 0 {
			if err := srv.Send(&common.Data{Bytes: append([]byte(nil), buf[:k]...)}); err != nil {
				return err
			}
		}
		if err != nil {
			return nil //nolint:nilerr // Talos's chunker ends the stream on any read error
		}
	}
}

// errEtcdDial is a blocking etcd dial that timed out, as clientv3 reports it.
var errEtcdDial = fmt.Errorf("error building etcd client: %w", context.DeadlineExceeded)

// localEtcd is Talos's etcd.NewLocalClient: a client of the node's own
// etcd, waiting up to Timing.EtcdDial for it to run (a blocking dial), and
// the simulated member's id. The lab's etcd is the cluster's real one,
// reached only on loopback.
func (n *Node) localEtcd(ctx context.Context) (*clientv3.Client, uint64, error) {
	deadline := time.NewTimer(n.fleet.timing.EtcdDial)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if ep, id := n.etcdEndpoint(); ep != "" {
			cli, err := newEtcdClient(ctx, ep)
			return cli, id, err
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("error building etcd client: %w", ctx.Err())
		case <-deadline.C:
			return nil, 0, errEtcdDial
		case <-tick.C:
		}
	}
}

// etcdEndpoint is the real etcd's URL while the node's etcd member runs
// (started, on this running control plane, still a member), with the
// member's id; else "".
func (n *Node) etcdEndpoint() (string, uint64) {
	f := n.fleet
	f.mu.Lock()
	m, c := n.etcdMember, n.cluster
	serving := m != nil && c != nil && m.up() && c.etcd.member(m.id) == m
	f.mu.Unlock()
	if !serving || f.opts.EtcdEndpoint == nil {
		return "", 0
	}
	return f.opts.EtcdEndpoint(c), m.id
}

// newEtcdClient is a client of the etcd at endpoint, refusing anything but
// a loopback address.
func newEtcdClient(ctx context.Context, endpoint string) (*clientv3.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("etcd endpoint %q: %w", endpoint, err)
	}
	if err := labnet.CheckLoopback(u.Hostname()); err != nil {
		return nil, fmt.Errorf("etcd endpoint: %w", err)
	}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return labnet.Dialer().DialContext(ctx, "tcp4", addr)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		Context:     ctx,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(dial)},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("error building etcd client: %w", err)
	}
	return cli, nil
}

// EtcdStatus is etcd's Status of the node's member, from the cluster's
// real etcd (database size and size in use, raft term and indexes,
// version, storage version, alarms) with the simulated member's id, its
// learner flag and the simulated leader (0 without quorum). It is refused
// and fails where EtcdSnapshot is and does.
func (s *machineServer) EtcdStatus(ctx context.Context, _ *emptypb.Empty) (*machine.EtcdStatusResponse, error) {
	n := s.node
	if _, err := n.requireControlPlane("etcd status"); err != nil {
		return nil, err
	}
	cli, id, err := n.localEtcd(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to create etcd client: %w", err)
	}
	defer cli.Close()
	resp, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		return nil, fmt.Errorf("failed to query etcd status: %w", err)
	}
	st := &machine.EtcdMemberStatus{
		MemberId: id, ProtocolVersion: resp.Version, StorageVersion: resp.StorageVersion,
		DbSize: resp.DbSize, DbSizeInUse: resp.DbSizeInUse,
		RaftIndex: resp.RaftIndex, RaftTerm: resp.RaftTerm, RaftAppliedIndex: resp.RaftAppliedIndex,
		Errors: resp.Errors,
	}
	f := n.fleet
	f.mu.Lock()
	if c := n.cluster; c != nil {
		c.etcd.elect()
		st.Leader = c.etcd.leader
		if m := c.etcd.member(id); m != nil {
			st.IsLearner = m.learner
		}
	}
	f.mu.Unlock()
	return &machine.EtcdStatusResponse{Messages: []*machine.EtcdStatus{{MemberStatus: st}}}, nil
}
