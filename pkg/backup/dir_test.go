package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/backup"
)

// put stores a bundle of content under rec, with the size and sha256
// left for Put to fill.
func put(t *testing.T, target backup.Target, rec backup.Record, content string) {
	t.Helper()
	if err := target.Put(t.Context(), rec, strings.NewReader(content)); err != nil {
		t.Fatalf("Put %s: %v", rec.Name, err)
	}
}

func TestDirPutListGetDelete(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "backups")
	target := backup.Dir(dir)
	if target.String() != dir {
		t.Errorf("String = %q, want %q", target.String(), dir)
	}
	if recs, err := target.List(t.Context(), "prod"); err != nil || len(recs) != 0 {
		t.Fatalf("List before the first Put = %v, %v; want none", recs, err)
	}
	older, newer := record("prod", bundleTime.Add(-time.Hour)), record("prod", bundleTime)
	put(t, target, older, "older bundle")
	put(t, target, newer, "newer bundle")
	put(t, target, record("prod-eu", bundleTime), "another cluster's bundle")
	if err := os.WriteFile(filepath.Join(dir, backup.Name("prod", bundleTime.Add(time.Hour))), []byte("unfinished"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, filepath.Join(dir, newer.Name), 0o600)
	assertMode(t, filepath.Join(dir, newer.Name+backup.RecordExt), 0o600)

	recs, err := target.List(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Name != newer.Name || recs[1].Name != older.Name {
		t.Fatalf("List = %v, want the two prod records, newest first", names(recs))
	}
	sum := sha256.Sum256([]byte("newer bundle"))
	if r := recs[0]; r.BundleSize != int64(len("newer bundle")) || r.BundleSHA256 != hex.EncodeToString(sum[:]) || r.Problem != "" {
		t.Errorf("newest record = %+v, want Put's size and sha256 and no problem", r)
	}
	if err := backup.Verify(t.Context(), target, recs[0]); err != nil {
		t.Errorf("Verify: %v", err)
	}
	rc, err := target.Get(t.Context(), newer.Name)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(got) != "newer bundle" {
		t.Errorf("Get = %q", got)
	}

	if err := target.Delete(t.Context(), older.Name); err != nil {
		t.Fatal(err)
	}
	if recs, _ := target.List(t.Context(), "prod"); len(recs) != 1 || recs[0].Name != newer.Name {
		t.Errorf("List after Delete = %v, want only %s", names(recs), newer.Name)
	}
	if _, err := os.Stat(filepath.Join(dir, older.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted bundle is still there: %v", err)
	}
	if err := target.Delete(t.Context(), older.Name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete of a deleted backup = %v, want ErrNotExist", err)
	}
}

func TestDirPutKeepsNothingWhenTheBundleIsNotTheRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := backup.Dir(dir)
	rec := record("prod", bundleTime)
	rec.BundleSize, rec.BundleSHA256 = 3, strings.Repeat("0", 64)
	if err := target.Put(t.Context(), rec, strings.NewReader("abc")); err == nil {
		t.Fatal("Put stored a bundle whose sha256 is not its record's")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Put left %v", entries)
	}
	put(t, target, record("prod", bundleTime), "first")
	if err := target.Put(t.Context(), record("prod", bundleTime), strings.NewReader("second")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second Put of one name = %v, want ErrExist", err)
	}
	bad := record("prod", bundleTime)
	bad.Meta.Cluster = "staging"
	if err := target.Put(t.Context(), bad, strings.NewReader("x")); err == nil {
		t.Error("Put stored staging's record under prod's name")
	}
}

func TestDirListMarksARecordWithoutItsBundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := backup.Dir(dir)
	missing, short := record("prod", bundleTime), record("prod", bundleTime.Add(-time.Hour))
	put(t, target, missing, "gone")
	put(t, target, short, "full length")
	if err := os.Remove(filepath.Join(dir, missing.Name)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, short.Name), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := target.List(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || !strings.Contains(recs[0].Problem, "is missing") || !strings.Contains(recs[1].Problem, "is 5 bytes, its record says 11") {
		t.Errorf("List = %+v, want both marked", recs)
	}
	if err := target.Delete(t.Context(), missing.Name); err != nil {
		t.Errorf("Delete of a record whose bundle is gone: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, short.Name+backup.RecordExt), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := target.List(t.Context(), "prod"); err == nil || !strings.Contains(err.Error(), short.Name+backup.RecordExt) {
		t.Errorf("List with a broken record = %v, want an error naming it", err)
	}
}

func TestDirListRefusesARenamedRecordAndSkipsDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := backup.Dir(dir)
	put(t, target, record("prod", bundleTime), "bundle")
	if err := os.Mkdir(filepath.Join(dir, backup.Name("prod", bundleTime.Add(time.Hour))+backup.RecordExt), 0o700); err != nil {
		t.Fatal(err)
	}
	if recs, err := target.List(t.Context(), "prod"); err != nil || len(recs) != 1 {
		t.Fatalf("List beside a directory named like a record = %v, %v; want the one record", names(recs), err)
	}
	renamed := backup.Name("prod", bundleTime.Add(-time.Hour)) + backup.RecordExt
	if err := os.Rename(filepath.Join(dir, backup.Name("prod", bundleTime)+backup.RecordExt), filepath.Join(dir, renamed)); err != nil {
		t.Fatal(err)
	}
	if _, err := target.List(t.Context(), "prod"); err == nil || !strings.Contains(err.Error(), "was renamed") {
		t.Errorf("List with a renamed record = %v, want was renamed", err)
	}
}

func TestDirPutLeavesNoBundleWithoutItsRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := backup.Dir(dir)
	rec := record("prod", bundleTime)
	if err := os.WriteFile(filepath.Join(dir, rec.Name+backup.RecordExt), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := target.Put(t.Context(), rec, strings.NewReader("bundle")); err == nil {
		t.Fatal("Put replaced an existing record")
	}
	if _, err := os.Stat(filepath.Join(dir, rec.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Put left its bundle without a record: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	canceling := io.MultiReader(strings.NewReader("first part"), readerFunc(func([]byte) (int, error) {
		cancel()
		return 0, nil
	}), strings.NewReader("second part"))
	rec = record("prod", bundleTime.Add(time.Hour))
	if err := target.Put(ctx, rec, canceling); !errors.Is(err, context.Canceled) {
		t.Errorf("Put canceled while reading = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, rec.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a canceled Put left its bundle: %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestVerifyCatchesAChangedStoredBundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := backup.Dir(dir)
	rec := record("prod", bundleTime)
	put(t, target, rec, "the sealed bundle")
	recs, err := target.List(t.Context(), "prod")
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	path := filepath.Join(dir, rec.Name)
	data := bytes.Clone(mustRead(t, path))
	data[3] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := backup.Verify(t.Context(), target, recs[0]); err == nil || !strings.Contains(err.Error(), "changed after it was stored") {
		t.Errorf("Verify = %v, want changed after it was stored", err)
	}
}

func TestDirRefusesNamesItDidNotMake(t *testing.T) {
	t.Parallel()
	target := backup.Dir(t.TempDir())
	for _, name := range []string{"../prod-20261206T061500Z.tar.age", "prod.tar.age", "prod-20261206T061500Z.tar", "-20261206T061500Z.tar.age"} {
		if _, err := target.Get(t.Context(), name); err == nil || !strings.Contains(err.Error(), "is not <cluster>-") {
			t.Errorf("Get(%q) = %v, want a refusal", name, err)
		}
		if err := target.Delete(t.Context(), name); err == nil {
			t.Errorf("Delete(%q) accepted", name)
		}
	}
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}

func names(recs []backup.Record) []string {
	var ns []string
	for _, r := range recs {
		ns = append(ns, r.Name)
	}
	return ns
}
