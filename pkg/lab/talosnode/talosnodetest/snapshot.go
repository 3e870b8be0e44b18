// Package talosnodetest reads what the lab's Talos nodes hand out, for
// tests: an etcd snapshot streamed by EtcdSnapshot.
package talosnodetest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// Snapshot is what an etcd snapshot file holds.
type Snapshot struct {
	// Status is etcdutl's "snapshot status" of the file (hash, revision,
	// total keys, size), as talosctl prints it.
	Status snapshot.Status
	// Keys are the keys live at the snapshot's revision.
	Keys map[string]bool
}

// ReadSnapshot checks that the file at path is an etcd snapshot as etcd's
// maintenance API streams it (and Talos's EtcdSnapshot passes it on): a
// bbolt database followed by its sha256, so size%512 == 32, the check
// talosctl makes. It returns etcdutl's status of it and its live keys.
func ReadSnapshot(path string) (Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Snapshot{}, err
	}
	if len(b)%512 != sha256.Size {
		return Snapshot{}, fmt.Errorf("snapshot %s: %d bytes, %d mod 512: no sha256 trailer", path, len(b), len(b)%512)
	}
	db, trailer := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if sum := sha256.Sum256(db); !bytes.Equal(sum[:], trailer) {
		return Snapshot{}, fmt.Errorf("snapshot %s: the trailer %x is not the sha256 %x of the database", path, trailer, sum)
	}
	st, err := snapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: status: %w", path, err)
	}
	keys, err := liveKeys(path)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return Snapshot{Status: st, Keys: keys}, nil
}

// liveKeys reads etcd's key bucket (revision → KeyValue, in revision
// order) as etcdutl does: a tombstone deletes its key.
func liveKeys(path string) (map[string]bool, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	keys := map[string]bool{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Key.Name())
		if b == nil {
			return fmt.Errorf("no %q bucket", schema.Key.Name())
		}
		return b.ForEach(func(rev, v []byte) error {
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("revision %x: %w", rev, err)
			}
			if mvcc.IsTombstone(rev) {
				delete(keys, string(kv.Key))
			} else {
				keys[string(kv.Key)] = true
			}
			return nil
		})
	})
	return keys, err
}
