package backup

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"filippo.io/age"
)

// maxMeta bounds meta.json: it lists a few names and numbers.
const maxMeta = 1 << 20

// Open decrypts r with ids, unpacks it into dir (snapshot.db and the
// cluster files; refusing any name that leaves dir and any file already
// there), checks the snapshot's sha256 and size against meta.json, and
// returns Meta. A wrong identity, a changed byte and a missing part are
// each a clear error; after an error dir may hold a part of the bundle.
func Open(r io.Reader, dir string, ids ...age.Identity) (Meta, error) {
	plain, err := age.Decrypt(r, ids...)
	if err != nil {
		if _, ok := errors.AsType[*age.NoIdentityMatchError](err); ok {
			return Meta{}, fmt.Errorf("backup bundle: no given age identity opens it (a wrong key, or a corrupt header): "+
				"use the key of one of cluster.yaml's backup recipients: %w", err)
		}
		return Meta{}, fmt.Errorf("backup bundle: decrypt: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Meta{}, fmt.Errorf("backup bundle: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Meta{}, fmt.Errorf("backup bundle: %w", err)
	}
	defer func() { _ = root.Close() }()
	u := unpacker{root: root, tr: tar.NewReader(plain)}
	if err := u.unpack(); err != nil {
		return Meta{}, fmt.Errorf("backup bundle: %w", err)
	}
	// Read to the end: age authenticates its last chunk only there.
	if _, err := io.Copy(io.Discard, plain); err != nil {
		return Meta{}, fmt.Errorf("backup bundle: decrypt: %w", err)
	}
	return u.meta, nil
}

// unpacker reads a bundle's tar into root.
type unpacker struct {
	root     *os.Root
	tr       *tar.Reader
	meta     Meta
	snapshot bool
	files    []string
}

// unpack reads meta.json (which must come first), then the snapshot and
// the files, and checks that nothing meta.json lists is missing.
func (u *unpacker) unpack() error {
	if err := u.readMeta(); err != nil {
		return err
	}
	for {
		h, err := u.tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar (is the file corrupt or truncated?): %w", err)
		}
		if err := u.entry(h); err != nil {
			return err
		}
	}
	if !u.snapshot {
		return fmt.Errorf("%s is missing", snapshotName)
	}
	slices.Sort(u.files)
	if !slices.Equal(u.files, u.meta.Files) {
		return fmt.Errorf("%s lists files %q, the bundle holds %q", metaName, u.meta.Files, u.files)
	}
	return nil
}

// readMeta decodes the first entry, meta.json.
func (u *unpacker) readMeta() error {
	h, err := u.tr.Next()
	if err != nil {
		return fmt.Errorf("%s is missing: %w", metaName, err)
	}
	if h.Name != metaName || h.Typeflag != tar.TypeReg {
		return fmt.Errorf("%s is missing: the first entry is %q", metaName, h.Name)
	}
	data, err := io.ReadAll(io.LimitReader(u.tr, maxMeta))
	if err != nil {
		return fmt.Errorf("read %s: %w", metaName, err)
	}
	if err := json.Unmarshal(data, &u.meta); err != nil {
		return fmt.Errorf("decode %s: %w", metaName, err)
	}
	if u.meta.Format != Format {
		return fmt.Errorf("%s: format %d, this talosc reads format %d: use a talosc that wrote it", metaName, u.meta.Format, Format)
	}
	return nil
}

// entry writes one tar entry: snapshot.db or files/<name>.
func (u *unpacker) entry(h *tar.Header) error {
	if h.Typeflag != tar.TypeReg {
		return fmt.Errorf("entry %q is not a regular file; refusing it", h.Name)
	}
	switch name, isFile := strings.CutPrefix(h.Name, filesDir); {
	case h.Name == snapshotName && !u.snapshot:
		u.snapshot = true
		return u.writeSnapshot()
	case isFile && localName(name) && !slices.Contains(u.files, name):
		u.files = append(u.files, name)
		return u.write(name)
	default:
		return fmt.Errorf("entry %q is not a bundle part (or leaves the directory, or comes twice); refusing it", h.Name)
	}
}

// writeSnapshot writes snapshot.db and checks it against meta.json.
func (u *unpacker) writeSnapshot() error {
	h := sha256.New()
	n, err := u.create(snapshotName, io.TeeReader(u.tr, h))
	if err != nil {
		return err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != u.meta.SnapshotSize || sum != u.meta.SnapshotSHA256 {
		return fmt.Errorf("%s is %d bytes with sha256 %s; %s says %d bytes, %s", snapshotName, n, sum, metaName, u.meta.SnapshotSize, u.meta.SnapshotSHA256)
	}
	return nil
}

// write writes one cluster file, creating its parent directories.
func (u *unpacker) write(name string) error {
	if d := path.Dir(name); d != "." {
		if err := u.root.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("unpack %s: %w", name, err)
		}
	}
	_, err := u.create(name, u.tr)
	return err
}

// create writes a new 0600 file inside root; an existing one is refused.
func (u *unpacker) create(name string, r io.Reader) (int64, error) {
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("unpack %s: it already exists; open the bundle into an empty directory", name)
	}
	if err != nil {
		return 0, fmt.Errorf("unpack %s: %w", name, err)
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("unpack %s (is the file corrupt or truncated?): %w", name, err)
	}
	return n, nil
}
