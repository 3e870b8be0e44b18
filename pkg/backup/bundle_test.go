package backup_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/backup"
)

var bundleTime = time.Date(2026, 12, 6, 6, 15, 0, 0, time.UTC)

// fakeBundle is a bundle around a snapshot file of plain bytes: Seal and
// Open check its size and sha256, not what etcd would read in it.
func fakeBundle(t *testing.T) backup.Bundle {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "etcd.snapshot")
	data := bytes.Repeat([]byte("etcd snapshot bytes "), 4000)
	if err := os.WriteFile(snap, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return backup.Bundle{
		Meta: backup.Meta{
			Format: backup.Format, Cluster: "prod", Node: "prod-cp-01", Time: bundleTime,
			Talos: "v1.11.5", Kubernetes: "1.34.2", Revision: 42, Keys: 40, Hash: 1234,
			SnapshotSize: int64(len(data)), SnapshotSHA256: hex.EncodeToString(sum[:]),
			Files: []string{"cluster.yaml", "patches/cp.yaml", "talossecrets.yaml"},
		},
		Snapshot: snap,
		Files: map[string][]byte{
			"cluster.yaml":      []byte("name: prod\n"),
			"patches/cp.yaml":   []byte("machine: {}\n"),
			"talossecrets.yaml": []byte("secrets: {}\n"),
		},
	}
}

func identity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func seal(t *testing.T, b backup.Bundle, to ...age.Recipient) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := backup.Seal(&buf, b, to...); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return buf.Bytes()
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	id, other := identity(t), identity(t)
	b := fakeBundle(t)
	sealed := seal(t, b, other.Recipient(), id.Recipient())
	dir := filepath.Join(t.TempDir(), "restore")
	meta, err := backup.Open(bytes.NewReader(sealed), dir, id)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if diff := cmp.Diff(b.Meta, meta); diff != "" {
		t.Errorf("Open's meta (-sealed +opened):\n%s", diff)
	}
	want := map[string][]byte{"snapshot.db": mustRead(t, b.Snapshot)}
	maps.Copy(want, b.Files)
	for name, data := range want {
		p := filepath.Join(dir, name)
		if got := mustRead(t, p); !bytes.Equal(got, data) {
			t.Errorf("%s = %q, want %q", name, got, data)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
}

func TestOpenRefusesAChangedByteOrAWrongIdentity(t *testing.T) {
	t.Parallel()
	id := identity(t)
	sealed := seal(t, fakeBundle(t), id.Recipient())
	changed := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	for _, tc := range []struct {
		name, want string
		data       []byte
		id         age.Identity
	}{
		{"a byte of the payload", "decrypt", changed(len(sealed) / 2), id},
		{"a byte of the last chunk", "decrypt", changed(len(sealed) - 5), id},
		{"a byte of the header's stanza", "no given age identity opens it", swapped(sealed, bytes.Index(sealed, []byte("\n-> X25519 "))+1), id},
		{"a byte of the header's MAC", "decrypt", changed(bytes.Index(sealed, []byte("\n--- ")) + 8), id},
		{"truncated", "decrypt", sealed[:len(sealed)-100], id},
		{"a wrong identity", "no given age identity opens it", sealed, identity(t)},
	} {
		_, err := backup.Open(bytes.NewReader(tc.data), t.TempDir(), tc.id)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSealRefusesAMetaThatDoesNotDescribeTheBundle(t *testing.T) {
	t.Parallel()
	id := identity(t)
	for _, tc := range []struct {
		name, want string
		edit       func(*backup.Bundle)
	}{
		{"files unsorted", "files lists", func(b *backup.Bundle) { b.Meta.Files[0], b.Meta.Files[1] = b.Meta.Files[1], b.Meta.Files[0] }},
		{"a file missing from meta", "files lists", func(b *backup.Bundle) { b.Files["extra.yaml"] = nil }},
		{"a name leaving the directory", "clean path", func(b *backup.Bundle) { b.Files["../x"] = nil }},
		{"another snapshot", "changed since it was verified", func(b *backup.Bundle) { b.Meta.SnapshotSHA256 = strings.Repeat("0", 64) }},
		{"a longer snapshot", "changed since it was verified", func(b *backup.Bundle) { b.Meta.SnapshotSize-- }},
		{"a shorter snapshot", "changed since it was verified", func(b *backup.Bundle) { b.Meta.SnapshotSize++ }},
		{"format", "format", func(b *backup.Bundle) { b.Meta.Format = 2 }},
		{"no snapshot sha256", "must be set", func(b *backup.Bundle) { b.Meta.SnapshotSHA256 = "" }},
	} {
		b := fakeBundle(t)
		tc.edit(&b)
		if err := backup.Seal(&bytes.Buffer{}, b, id.Recipient()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Seal err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// swapped changes the first character of the line after the one at i
// (a stanza's base64 body) to another base64 character.
func swapped(sealed []byte, i int) []byte {
	c := bytes.Clone(sealed)
	body := i + bytes.IndexByte(c[i:], '\n') + 1
	if c[body] == 'A' {
		c[body] = 'B'
	} else {
		c[body] = 'A'
	}
	return c
}

// entry is one tar entry of a crafted bundle.
type entry struct {
	name     string
	data     []byte
	typeflag byte
}

// craft encrypts a hand-made tar, as an attacker or a bug would make it.
func craft(t *testing.T, to age.Recipient, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	aw, err := age.Encrypt(&buf, to)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(aw)
	for _, e := range entries {
		if e.name == "" { // raw bytes after the tar's end marker
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := aw.Write(e.data); err != nil {
				t.Fatal(err)
			}
			continue
		}
		h := &tar.Header{Name: e.name, Size: int64(len(e.data)), Mode: 0o600, Typeflag: e.typeflag}
		if e.typeflag == tar.TypeSymlink {
			h.Linkname, h.Size = "/etc/passwd", 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestOpenRefusesACraftedBundle(t *testing.T) {
	t.Parallel()
	id := identity(t)
	b := fakeBundle(t)
	snap := mustRead(t, b.Snapshot)
	metaWith := func(files ...string) entry {
		m := b.Meta
		m.Files = files
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return entry{name: "meta.json", data: data}
	}
	snapshot := entry{name: "snapshot.db", data: snap}
	format2 := metaWith()
	format2.data = bytes.Replace(format2.data, []byte(`"format":1`), []byte(`"format":2`), 1)
	huge := metaWith()
	huge.data = append(bytes.Repeat([]byte(" "), 1<<20), huge.data...)
	for _, tc := range []struct {
		name, want string
		entries    []entry
	}{
		{"a name escaping dir", "leaves the directory", []entry{metaWith("../escaped"), snapshot, {name: "files/../escaped", data: []byte("x")}}},
		{"an absolute name", "leaves the directory", []entry{metaWith("/tmp/abs"), snapshot, {name: "files//tmp/abs", data: []byte("x")}}},
		{"a symlink", "not a regular file", []entry{metaWith("link"), snapshot, {name: "files/link", typeflag: tar.TypeSymlink}}},
		{"an unknown part", "not a bundle part", []entry{metaWith(), snapshot, {name: "other", data: []byte("x")}}},
		{"two snapshots", "not a bundle part", []entry{metaWith(), snapshot, snapshot}},
		{"no meta.json", "meta.json is missing", []entry{snapshot}},
		{"a later format", "format 2", []entry{format2, snapshot}},
		{"a meta.json over 1 MiB", "decode meta.json", []entry{huge, snapshot}},
		{"meta.json not first", "meta.json is missing", []entry{snapshot, metaWith()}},
		{"no snapshot", "snapshot.db is missing", []entry{metaWith()}},
		{"a listed file missing", "lists files", []entry{metaWith("cluster.yaml"), snapshot}},
		{"another snapshot", "snapshot.db is", []entry{metaWith(), {name: "snapshot.db", data: snap[1:]}}},
	} {
		dir := filepath.Join(t.TempDir(), "restore")
		_, err := backup.Open(bytes.NewReader(craft(t, id.Recipient(), tc.entries...)), dir, id)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open err = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Lstat(filepath.Join(dir, "..", "escaped")); err == nil {
			t.Errorf("%s: a file was written outside dir", tc.name)
		}
	}
}

// TestOpenReadsPastTheTarsEnd: a tar padded to whole records (as tar(1)
// writes them) ends in zeros after its end marker; a change there is a
// changed byte too, and age finds it only when Open reads to the end.
func TestOpenReadsPastTheTarsEnd(t *testing.T) {
	t.Parallel()
	id := identity(t)
	b := fakeBundle(t)
	meta := b.Meta
	meta.Files = nil
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	padding := entry{name: "", data: make([]byte, 200<<10)}
	sealed := craft(t, id.Recipient(), entry{name: "meta.json", data: metaJSON}, entry{name: "snapshot.db", data: mustRead(t, b.Snapshot)}, padding)
	if _, err := backup.Open(bytes.NewReader(sealed), t.TempDir(), id); err != nil {
		t.Fatalf("Open of a padded tar: %v", err)
	}
	sealed[len(sealed)-5] ^= 0x01
	if _, err := backup.Open(bytes.NewReader(sealed), t.TempDir(), id); err == nil || !strings.Contains(err.Error(), "decrypt") {
		t.Errorf("Open of a padded tar with a changed last byte = %v, want a decrypt error", err)
	}
}

func TestOpenRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	id := identity(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := backup.Open(bytes.NewReader(seal(t, fakeBundle(t), id.Recipient())), dir, id)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("Open err = %v, want already exists", err)
	}
	if got := mustRead(t, filepath.Join(dir, "cluster.yaml")); string(got) != "mine" {
		t.Errorf("cluster.yaml was overwritten: %q", got)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	local := time.FixedZone("CET", 3600)
	if got := backup.Name("prod", time.Date(2026, 12, 6, 7, 15, 0, 999, local)); got != "prod-20261206T061500Z.tar.age" {
		t.Errorf("Name = %q", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
