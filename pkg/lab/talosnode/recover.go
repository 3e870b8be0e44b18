package talosnode

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcdRecovery is a node's side of an etcd recovery; f.mu guards it.
type etcdRecovery struct {
	// snapshot is what EtcdRecover uploaded (Talos's
	// /var/lib/etcd.snapshot, on EPHEMERAL: a wipe of EPHEMERAL drops
	// it); uploaded tells an empty upload from none.
	snapshot []byte
	uploaded bool
	// restoring: Bootstrap with RecoverEtcd restores it now (the etcd
	// service is Preparing); restoreErr is why the last restore failed
	// (the etcd service is Failed until the next boot or bootstrap).
	restoring  bool
	restoreErr error
	// recovered: this node's etcd was recovered from a snapshot and the
	// node has not rebooted since (Knobs.LosesRestoreAtReboot).
	recovered bool
}

// EtcdRecover stores the snapshot the client streams for a later
// Bootstrap with RecoverEtcd, as Talos writes it to
// /var/lib/etcd.snapshot. Talos accepts it on any control plane whose
// EPHEMERAL is mounted (here: running with its configuration), whether or
// not its etcd has data; Bootstrap refuses a node with data. A failed
// upload drops what an earlier one stored (Talos truncates the file, then
// removes it). The snapshot is checked only when it is restored.
func (s *machineServer) EtcdRecover(srv machine.MachineService_EtcdRecoverServer) error {
	n := s.node
	f := n.fleet
	f.mu.Lock()
	g, mounted := n.gen, n.osUp
	f.mu.Unlock()
	if !mounted {
		return status.Error(codes.FailedPrecondition, "etcd service is not ready for recovery yet")
	}
	if _, err := n.requireControlPlane("etcd recover"); err != nil {
		return err
	}
	n.storeSnapshot(g, nil, false)
	var buf bytes.Buffer
	for {
		msg, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		buf.Write(msg.GetBytes())
	}
	n.storeSnapshot(g, buf.Bytes(), true)
	return srv.SendAndClose(&machine.EtcdRecoverResponse{Messages: []*machine.EtcdRecover{{}}})
}

// storeSnapshot keeps snap as the node's uploaded snapshot unless the node
// rebooted since boot g.
func (n *Node) storeSnapshot(g uint64, snap []byte, uploaded bool) {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	if n.gen == g {
		n.snapshot, n.uploaded = snap, uploaded
	}
}

// bootstrapRecover starts what Bootstrap with RecoverEtcd starts: Talos
// answers at once, then its etcd service restores the uploaded snapshot
// (Preparing meanwhile) and runs as a new single-member cluster, or fails
// (Failed, with the restore's error: a missing upload, a snapshot whose
// sha256 trailer does not match unless skipHash). f.mu held; the caller
// runs the returned restore in the fleet's wait group.
func (n *Node) bootstrapRecover(mc *machineConfig, skipHash bool) func() {
	n.restoring, n.restoreErr = true, nil
	g, c, info := n.gen, n.cluster, n.bootstrapInfo(mc)
	snap, uploaded := n.snapshot, n.uploaded
	name := n.hostname()
	peer := (&etcdMember{addr: n.addr}).peerURL()
	return func() {
		err := n.fleet.replaceEtcd(info, func(dir string) error {
			return restoreSnapshot(snap, uploaded, dir, name, peer, skipHash)
		})
		n.restored(g, c, err)
	}
}

// restored ends a restore of boot g: on success the node is the single
// member of a new etcd cluster, which the waiting control planes join.
func (n *Node) restored(g uint64, c *Cluster, err error) {
	f := n.fleet
	f.mu.Lock()
	if n.gen != g {
		f.mu.Unlock()
		return
	}
	n.restoring = false
	if err != nil {
		n.restoreErr = fmt.Errorf("failed to run pre stage: %w", err)
		f.mu.Unlock()
		n.changed(c)
		return
	}
	n.snapshot, n.uploaded = nil, false // Talos deletes the snapshot file
	c.etcd = etcdCluster{seed: c.etcd.seed, serial: c.etcd.serial}
	c.etcd.bootstrap(n)
	n.etcdData, n.recovered = true, true
	c.joinWaiting(n)
	f.mu.Unlock()
	n.changed(c)
}

// restoreSnapshot is the etcd service's recoverFromSnapshot: the
// snapshot's status, then etcd's own restore into dir as a single-member
// cluster of name at peer, checking the snapshot's sha256 trailer unless
// skipHash.
func restoreSnapshot(snap []byte, uploaded bool, dir, name, peer string, skipHash bool) error {
	if !uploaded {
		return fmt.Errorf("error verifying snapshot: %w",
			&fs.PathError{Op: "open", Path: constants.EtcdRecoverySnapshotPath, Err: syscall.ENOENT})
	}
	if !skipHash {
		if err := checkTrailer(snap); err != nil {
			return fmt.Errorf("error recovering from the snapshot: %w", err)
		}
	}
	tmp, err := os.MkdirTemp("", "talosnode-recover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, filepath.Base(constants.EtcdRecoverySnapshotPath))
	if err := os.WriteFile(path, snap, 0o600); err != nil {
		return err
	}
	m := snapshot.NewV3(zap.NewNop())
	if _, err := m.Status(path); err != nil {
		return fmt.Errorf("error verifying snapshot: %w", err)
	}
	err = m.Restore(snapshot.RestoreConfig{
		SnapshotPath: path, Name: name, OutputDataDir: dir,
		PeerURLs: []string{peer}, InitialCluster: name + "=" + peer,
		SkipHashCheck: skipHash,
	})
	if err != nil {
		return fmt.Errorf("error recovering from the snapshot: %w", err)
	}
	return nil
}

// checkTrailer is the check of etcd's restore (copyAndVerifyDB), with
// its texts: the snapshot must end in the sha256 of the rest. The lab
// checks first because bbolt, which etcd's Status opens the snapshot with
// before, panics in a goroutine of its own on a corrupted database,
// taking the whole lab down.
func checkTrailer(snap []byte) error {
	n := len(snap)
	if n%512 != sha256.Size {
		return errors.New("snapshot missing hash but --skip-hash-check=false")
	}
	want, got := snap[n-sha256.Size:], sha256.Sum256(snap[:n-sha256.Size])
	if !bytes.Equal(want, got[:]) {
		return fmt.Errorf("expected sha256 %v, got %v", want, got[:])
	}
	return nil
}

// replaceEtcd hands fill to Options.EtcdRestore; without one the
// snapshot is restored into a directory thrown away.
func (f *Fleet) replaceEtcd(info BootstrapInfo, fill func(dir string) error) error {
	if f.opts.EtcdRestore != nil {
		return f.opts.EtcdRestore(info, fill)
	}
	if fill == nil {
		return nil
	}
	tmp, err := os.MkdirTemp("", "talosnode-etcd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return fill(filepath.Join(tmp, "etcd"))
}

// recoveryState is the etcd service while a recovery runs or after one
// failed; ok false otherwise. f.mu held.
func (n *Node) recoveryState() (serviceState, bool) {
	switch {
	case n.restoring:
		return serviceState{"Preparing", "Running pre state", false}, true
	case n.restoreErr != nil && !n.etcdData:
		msg := n.restoreErr.Error()
		return serviceState{"Failed", strings.ToUpper(msg[:1]) + msg[1:], false}, true
	}
	return serviceState{}, false
}

// rebootLosesRestore is Knobs.LosesRestoreAtReboot at a reboot: true
// (once) when the node's etcd was recovered since its last boot and the
// knob is set; the caller then empties the cluster's real etcd. f.mu held.
func (n *Node) rebootLosesRestore() bool {
	lose := n.recovered && n.knobs.LosesRestoreAtReboot
	n.recovered = false
	return lose
}

// loseRestore empties the cluster's real etcd (Knobs.LosesRestoreAtReboot).
func (n *Node) loseRestore(info BootstrapInfo) {
	_ = n.fleet.replaceEtcd(info, nil) // nothing to report it to: the product's proof sees it
}

// joinWaiting makes the running control planes without etcd data other
// than except join etcd; f.mu held.
func (c *Cluster) joinWaiting(except *Node) {
	for _, m := range c.controlPlanes() {
		if m != except && m.servicesUp && m.osUp && !m.etcdData && !m.restoring {
			m.joinEtcd()
		}
	}
}

// loseEtcdIfGone forgets the cluster's etcd once no control plane of it
// holds etcd data any more (each wiped, or deleted): the cluster has no
// etcd to join until one is bootstrapped or recovered. It reports
// whether that happened now; f.mu held.
func (c *Cluster) loseEtcdIfGone() bool {
	if !c.etcd.bootstrapped {
		return false
	}
	for _, n := range c.fleet.nodes {
		if n.cluster == c && n.cfg != nil && n.cfg.controlPlane() && (n.etcdData || n.restoring) {
			return false
		}
	}
	c.etcd = etcdCluster{seed: c.etcd.seed, serial: c.etcd.serial}
	for _, n := range c.fleet.nodes {
		if n.cluster == c {
			n.etcdMember, n.recovered = nil, false
		}
	}
	return true
}
