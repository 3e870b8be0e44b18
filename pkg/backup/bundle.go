// Package backup is the backup bundle (an etcd snapshot and the cluster
// files, tarred and encrypted with age), its sidecar record, the targets
// bundles are kept in and their retention. It links no etcd server code
// and no Talos machinery: the front door imports it (the snapshot itself
// is checked by pkg/backup/snapshot, in tc-nodes).
package backup

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
)

const (
	// Ext is a bundle's file suffix.
	Ext = ".tar.age"
	// RecordExt is the suffix a bundle's sidecar record adds to its name.
	RecordExt = ".json"
	// Format is the bundle layout Seal writes and Open reads.
	Format = 1

	metaName     = "meta.json"
	snapshotName = "snapshot.db"
	filesDir     = "files/"
	timeLayout   = "20060102T150405Z"
)

// Meta describes one bundle (meta.json inside the tar; also in the
// sidecar record).
type Meta struct {
	Format         int       `json:"format"`
	Cluster        string    `json:"cluster"`
	Node           string    `json:"node"` // the control plane the snapshot came from
	Time           time.Time `json:"time"` // UTC
	Talos          string    `json:"talos"`
	Kubernetes     string    `json:"kubernetes"`
	Revision       int64     `json:"revision"`
	Keys           int64     `json:"keys"`
	Hash           uint32    `json:"hash"`
	SnapshotSize   int64     `json:"snapshotSize"`
	SnapshotSHA256 string    `json:"snapshotSHA256"` // hex, of the whole snapshot file (trailer included)
	Files          []string  `json:"files"`          // the cluster files in the bundle, relative, sorted
}

// Bundle is what Seal writes. Snapshot is the path of a snapshot file
// already verified (snapshot.Verify); Files maps a cluster-directory-
// relative name (talossecrets.yaml, cluster.yaml, its includes) to its
// content.
type Bundle struct {
	Meta     Meta
	Snapshot string
	Files    map[string][]byte
}

// Name is the file name of cluster's bundle taken at t:
// "<cluster>-20261206T061500Z.tar.age" (UTC, so names sort by time).
func Name(cluster string, t time.Time) string {
	return cluster + "-" + t.UTC().Format(timeLayout) + Ext
}

// Seal writes b as a tar (meta.json, snapshot.db, files/<name>...)
// encrypted with age to recipients. b.Meta must describe the bundle:
// Format 1, Files the sorted names of b.Files, SnapshotSize and
// SnapshotSHA256 those of the snapshot file (snapshot.Verify's Status);
// a snapshot that differs fails Seal, and what it wrote must then be
// discarded.
func Seal(w io.Writer, b Bundle, recipients ...age.Recipient) error {
	if err := checkMeta(b); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(b.Meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", metaName, err)
	}
	aw, err := age.Encrypt(w, recipients...)
	if err != nil {
		return fmt.Errorf("encrypt backup bundle: %w", err)
	}
	tw := tar.NewWriter(aw)
	mtime := b.Meta.Time.UTC()
	if err := writeEntry(tw, metaName, meta, mtime); err != nil {
		return err
	}
	if err := writeSnapshot(tw, b, mtime); err != nil {
		return err
	}
	for _, name := range b.Meta.Files {
		if err := writeEntry(tw, filesDir+name, b.Files[name], mtime); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write backup bundle: %w", err)
	}
	if err := aw.Close(); err != nil {
		return fmt.Errorf("encrypt backup bundle: %w", err)
	}
	return nil
}

// checkMeta refuses a Meta that does not describe b's files.
func checkMeta(b Bundle) error {
	m := b.Meta
	if m.Format != Format {
		return fmt.Errorf("backup meta: format is %d, want %d", m.Format, Format)
	}
	if m.Cluster == "" || m.Time.IsZero() || m.SnapshotSHA256 == "" {
		return errors.New("backup meta: cluster, time and snapshotSHA256 must be set (snapshotSHA256 from snapshot.Verify)")
	}
	names := make([]string, 0, len(b.Files))
	for name := range b.Files {
		if !localName(name) {
			return fmt.Errorf("backup file %q: want a clean path relative to the cluster directory", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, m.Files) {
		return fmt.Errorf("backup meta: files lists %q, the bundle has %q (sorted)", m.Files, names)
	}
	return nil
}

// localName reports whether name is a clean, slash-separated path that
// stays inside the directory it is relative to.
func localName(name string) bool {
	return name != "" && name == path.Clean(name) && !strings.HasPrefix(name, "/") &&
		name != ".." && !strings.HasPrefix(name, "../") && !strings.Contains(name, "\\")
}

// writeEntry writes one regular file into the tar.
func writeEntry(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	if err := tw.WriteHeader(header(name, int64(len(data)), mtime)); err != nil {
		return fmt.Errorf("write %s into backup bundle: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("write %s into backup bundle: %w", name, err)
	}
	return nil
}

// writeSnapshot copies the snapshot file into the tar, checking it is
// the one b.Meta describes.
func writeSnapshot(tw *tar.Writer, b Bundle, mtime time.Time) error {
	f, err := os.Open(b.Snapshot)
	if err != nil {
		return fmt.Errorf("etcd snapshot: %w", err)
	}
	defer func() { _ = f.Close() }()
	if err := tw.WriteHeader(header(snapshotName, b.Meta.SnapshotSize, mtime)); err != nil {
		return fmt.Errorf("write %s into backup bundle: %w", snapshotName, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tw, h), f)
	if err != nil && !errors.Is(err, tar.ErrWriteTooLong) {
		return fmt.Errorf("copy etcd snapshot %s into backup bundle: %w", b.Snapshot, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); err != nil || n != b.Meta.SnapshotSize || sum != b.Meta.SnapshotSHA256 {
		return fmt.Errorf("etcd snapshot %s changed since it was verified (%d bytes, sha256 %s; meta says %d bytes, %s): verify it again",
			b.Snapshot, n, sum, b.Meta.SnapshotSize, b.Meta.SnapshotSHA256)
	}
	return nil
}

// header is a regular file's tar header: 0600, owned by root, at mtime.
func header(name string, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: mtime, Format: tar.FormatPAX}
}
