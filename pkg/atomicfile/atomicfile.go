// Package atomicfile writes a file so that a reader sees its previous state
// or the whole new content, never a part: the secrets and client files,
// a saved plan, check's Prometheus textfile. Standard library only.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Options tunes Write.
type Options struct {
	// Mode is the file's mode, set on the temporary file before any data
	// is written (it is created 0600, so a secret is never readable by
	// others, not even briefly).
	Mode fs.FileMode
	// Replace allows an existing file at the path to be replaced; without
	// it an existing path is never touched and the error wraps
	// fs.ErrExist.
	Replace bool
	// BeforeCommit, when set, runs after the temporary file is written and
	// synced and before it is moved into place (tests simulate a crash or
	// a failure at the last moment with it).
	BeforeCommit func(tmp string) error
}

// Write writes data to path: to a temporary file in the same directory,
// fsynced, then moved into place and the directory fsynced.
func Write(path string, data []byte, o Options) error {
	return WriteFrom(path, bytes.NewReader(data), o)
}

// WriteFrom is Write for content read from r until EOF (a backup bundle,
// too large to hold in memory); an error reading r leaves nothing at path.
func WriteFrom(path string, r io.Reader, o Options) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
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
	if err := writeAndSync(tmp, r, o.Mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if o.BeforeCommit != nil {
		if err := o.BeforeCommit(tmpName); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := commit(tmpName, path, o.Replace); err != nil {
		return err
	}
	committed = true
	syncDir(dir)
	return nil
}

// writeAndSync sets the mode, copies r into f and flushes it.
func writeAndSync(f *os.File, r io.Reader, mode fs.FileMode) error {
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
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
