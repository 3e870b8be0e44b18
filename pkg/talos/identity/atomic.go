package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SecretFileMode is the mode of every file this package writes: they all
// hold credentials.
const SecretFileMode fs.FileMode = 0o600

// writeOptions tunes writeFileAtomic.
type writeOptions struct {
	// replace allows an existing file at the target path to be replaced.
	replace bool
	// beforeCommit, when set, runs after the temporary file is written and
	// synced and before it is moved into place. Tests use it to simulate a
	// crash or a failure at the last moment.
	beforeCommit func(tmp string) error
}

// writeFileAtomic writes data to path so that path either keeps its previous
// state or holds the complete new content, never a partial file: the data goes
// to a temporary file in the same directory, created 0600 from the start (so
// a secret is never world-readable, not even briefly), fsynced, then moved
// into place and the directory fsynced. Without o.replace an existing path is
// never touched and the error wraps fs.ErrExist.
func writeFileAtomic(path string, data []byte, o writeOptions) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}

	// os.CreateTemp creates the file with mode 0600.
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}

	tmpName := tmp.Name()
	committed := false

	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()

	if err := writeAndSync(tmp, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if o.beforeCommit != nil {
		if err := o.beforeCommit(tmpName); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}

	if err := commit(tmpName, path, o.replace); err != nil {
		return err
	}

	committed = true
	syncDir(dir)

	return nil
}

// writeAndSync writes data, enforces the mode (umask cannot widen 0600, but a
// chmod documents the intent and guards odd filesystems) and flushes it.
func writeAndSync(f *os.File, data []byte) error {
	if err := f.Chmod(SecretFileMode); err != nil {
		return err
	}

	if _, err := f.Write(data); err != nil {
		return err
	}

	if err := f.Sync(); err != nil {
		return err
	}

	return f.Close()
}

// commit moves the finished temporary file to path. Replacing uses rename(2),
// which is atomic. Creating uses link(2), which is atomic and fails with
// EEXIST instead of replacing a file that appeared in the meantime; where the
// filesystem has no hard links it falls back to check-then-rename.
func commit(tmp, path string, replace bool) error {
	if replace {
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("move new %s into place: %w", path, err)
		}

		return nil
	}

	linkErr := os.Link(tmp, path)
	if linkErr == nil {
		_ = os.Remove(tmp)

		return nil
	}

	if errors.Is(linkErr, fs.ErrExist) {
		return fmt.Errorf("%s already exists; refusing to overwrite it: %w", path, fs.ErrExist)
	}

	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists; refusing to overwrite it: %w", path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check %s: %w", path, err)
	}

	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("move new %s into place (link: %w): %w", path, linkErr, err)
	}

	return nil
}

// syncDir flushes the directory entry of a renamed file. It is best effort:
// some filesystems refuse fsync on directories, and the file itself is
// already complete and durable.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}

	_ = d.Sync()
	_ = d.Close()
}

// tightenMode narrows a file's permissions to 0600 when group or others have
// any access. It reports the previous permission bits and whether it changed
// them (or, with dryRun, would change them).
func tightenMode(path string, info fs.FileInfo, dryRun bool) (fs.FileMode, bool, error) {
	perm := info.Mode().Perm()
	if perm&0o077 == 0 {
		return perm, false, nil
	}

	if dryRun {
		return perm, true, nil
	}

	if err := os.Chmod(path, SecretFileMode); err != nil {
		return perm, false, fmt.Errorf("tighten mode of %s from %04o to %04o: %w", path, perm, SecretFileMode, err)
	}

	return perm, true, nil
}

// ReplaceFile writes data to path atomically, 0600, replacing what was
// there: a reader sees the old file or the whole new one, never a part.
func ReplaceFile(path string, data []byte) error {
	return writeFileAtomic(path, data, writeOptions{replace: true})
}
