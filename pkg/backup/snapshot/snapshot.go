// Package snapshot verifies an etcd snapshot file with etcd's own code
// (etcdutl). It links etcd's storage code: only tc-nodes links it, the
// front door reads what it found through pkg/backup's records.
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// trailerBlock is the unit the etcd Snapshot RPC's stream is a multiple
// of before it appends the sha256 of what it sent (etcdutl's hasChecksum).
const trailerBlock = 512

// Status is what Verify read from a snapshot file.
type Status struct {
	Revision int64  // the newest revision in the snapshot
	Keys     int64  // live keys (etcdutl's count: tombstoned keys excluded)
	Hash     uint32 // etcdutl's crc32 over every bucket, as `etcdctl snapshot status` prints it
	Size     int64  // the whole file's size, trailer included
	SHA256   string // hex, of the whole file, trailer included
}

// Verify checks the sha256 trailer the etcd Snapshot RPC appends
// (talosctl's rule: size%512 == 32 and the last 32 bytes are the sha256
// of the rest; a file without a valid trailer is refused) and reads the
// snapshot's status with etcdutl (revision, live keys, hash). An empty or
// implausible snapshot (no keys, revision 0) is refused.
func Verify(path string) (Status, error) {
	st, err := checkTrailer(path)
	if err != nil {
		return Status{}, err
	}
	ds, err := etcdsnapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return Status{}, fmt.Errorf("etcd snapshot %s: read its status: %w", path, err)
	}
	st.Revision, st.Keys, st.Hash = ds.Revision, int64(ds.TotalKey), ds.Hash
	if st.Revision <= 0 || st.Keys <= 0 {
		return Status{}, fmt.Errorf("etcd snapshot %s holds no data (revision %d, %d keys): take it from a control plane of a running cluster",
			path, st.Revision, st.Keys)
	}
	return st, nil
}

// checkTrailer reads the file once: its size, the sha256 of the whole
// file and of everything before the trailer, which must equal the trailer.
func checkTrailer(path string) (Status, error) {
	f, err := os.Open(path)
	if err != nil {
		return Status{}, fmt.Errorf("etcd snapshot: %w", err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return Status{}, fmt.Errorf("etcd snapshot: %w", err)
	}
	size := fi.Size()
	if size < trailerBlock+sha256.Size || size%trailerBlock != sha256.Size {
		return Status{}, fmt.Errorf("etcd snapshot %s (%d bytes) has no sha256 trailer: it is truncated or was not taken "+
			"through etcd's Snapshot API (a copy of member/snap/db is not a snapshot)", path, size)
	}
	whole, body := sha256.New(), sha256.New()
	if _, err := io.CopyN(io.MultiWriter(whole, body), f, size-sha256.Size); err != nil {
		return Status{}, fmt.Errorf("etcd snapshot %s: read: %w", path, err)
	}
	trailer := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, trailer); err != nil {
		return Status{}, fmt.Errorf("etcd snapshot %s: read its trailer: %w", path, err)
	}
	whole.Write(trailer)
	if !bytes.Equal(body.Sum(nil), trailer) {
		return Status{}, fmt.Errorf("etcd snapshot %s: sha256 trailer does not match its content: the file is corrupt, take a new snapshot", path)
	}
	return Status{Size: size, SHA256: hex.EncodeToString(whole.Sum(nil))}, nil
}
