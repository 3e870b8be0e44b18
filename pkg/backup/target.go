package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// Record is the sidecar "<bundle name>.json", written only after the
// bundle was fully written: its presence means a complete bundle. check
// and status read it without the age identity.
type Record struct {
	Name         string `json:"name"`
	Meta         Meta   `json:"meta"`
	BundleSize   int64  `json:"bundleSize"`
	BundleSHA256 string `json:"bundleSHA256"` // hex, of the encrypted bundle file
	// Problem is set by Target.List, never stored: the record's bundle is
	// missing or its size differs from BundleSize. Such a record is still
	// listed, so check reports it and retention can delete it.
	Problem string `json:"problem,omitempty"`
}

// Target is where bundles are kept.
type Target interface {
	// Put stores the bundle (atomically: a temporary name, then a rename;
	// 0600) and then its record. When rec.BundleSize and
	// rec.BundleSHA256 are zero Put fills them from the bytes it stored;
	// when set they must match, or nothing is kept. An existing bundle of
	// the same name is never replaced.
	Put(ctx context.Context, rec Record, bundle io.Reader) error
	// List returns this cluster's records, newest first. A bundle
	// without a record is ignored (a Put that did not finish); a record
	// whose bundle is missing or whose size differs is returned with its
	// Problem set; a record that cannot be read is an error naming it.
	List(ctx context.Context, cluster string) ([]Record, error)
	// Get opens the stored bundle name.
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// Delete removes the record first, then the bundle.
	Delete(ctx context.Context, name string) error
	// String names the target in messages: the directory's path.
	String() string
}

// Verify re-reads the stored bundle of rec and checks its size and
// sha256 against rec.
func Verify(ctx context.Context, t Target, rec Record) error {
	rc, err := t.Get(ctx, rec.Name)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	d := NewDigest()
	if _, err := io.Copy(d, CtxReader(ctx, rc)); err != nil {
		return fmt.Errorf("read backup %s in %s: %w", rec.Name, t, err)
	}
	if err := d.Check(rec); err != nil {
		return fmt.Errorf("backup %s in %s: %w", rec.Name, t, err)
	}
	return nil
}

// ClusterOf returns the cluster of a bundle name made by Name; false for
// any other name. A target lists only the names it reports as the
// cluster's.
func ClusterOf(name string) (string, bool) {
	s, ok := strings.CutSuffix(name, Ext)
	stamp := len(timeLayout) + 1
	if !ok || len(s) <= stamp || s[len(s)-stamp] != '-' || strings.ContainsAny(s, `/\`) {
		return "", false
	}
	if _, err := time.Parse(timeLayout, s[len(s)-stamp+1:]); err != nil {
		return "", false
	}
	return s[:len(s)-stamp], true
}

// CheckName refuses a name Name could not have made: a target stores,
// reads and deletes no other.
func CheckName(name string) error {
	if _, ok := ClusterOf(name); !ok {
		return fmt.Errorf("backup name %q is not <cluster>-<YYYYMMDDTHHMMSSZ>%s", name, Ext)
	}
	return nil
}

// CheckRecord refuses a record a target's Put must not store: a name
// Name could not have made, or one of another cluster than the record's.
func CheckRecord(rec Record) error {
	if err := CheckName(rec.Name); err != nil {
		return err
	}
	if c, _ := ClusterOf(rec.Name); c != rec.Meta.Cluster {
		return fmt.Errorf("backup %s: its record is of cluster %q", rec.Name, rec.Meta.Cluster)
	}
	return nil
}

// Digest counts and hashes (sha256) the bundle bytes written to it, as a
// target's Put stores them.
type Digest struct {
	h hash.Hash
	n int64
}

// NewDigest returns an empty Digest.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

func (d *Digest) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return d.h.Write(p)
}

// Size is the number of bytes written.
func (d *Digest) Size() int64 { return d.n }

// Sum is the hex sha256 of the bytes written.
func (d *Digest) Sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// Complete fills rec's size and sha256 from the digest when both are
// unset (Target.Put's contract), then checks them.
func (d *Digest) Complete(rec *Record) error {
	if rec.BundleSize == 0 && rec.BundleSHA256 == "" {
		rec.BundleSize, rec.BundleSHA256 = d.n, d.Sum()
	}
	return d.Check(*rec)
}

// Check compares the digest with the record's size and sha256.
func (d *Digest) Check(rec Record) error {
	if sum := d.Sum(); d.n != rec.BundleSize || sum != rec.BundleSHA256 {
		return fmt.Errorf("bundle is %d bytes with sha256 %s, its record says %d bytes, %s: it changed after it was stored; take a new backup",
			d.n, sum, rec.BundleSize, rec.BundleSHA256)
	}
	return nil
}

// CtxReader reads r until ctx is done: a target's Put reads the bundle
// through it, so a canceled run stops storing.
func CtxReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
