package identity_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/talos/identity"
)

func TestWriteFileAtomic_FailureKeepsPreviousFile(t *testing.T) {
	t.Parallel()

	for _, replace := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "talosconfig")

		if replace {
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
		}

		boom := errors.New("disk full")

		err := identity.WriteFileAtomic(path, []byte("new content"), replace, func(tmp string) error {
			// The temporary file is complete and private before the commit.
			if got := fileMode(t, tmp); got != 0o600 {
				t.Errorf("temporary file mode = %04o, want 0600", got)
			}

			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("replace=%v: error = %v, want the injected failure", replace, err)
		}

		data, readErr := os.ReadFile(path)

		switch {
		case replace && string(data) != "old":
			t.Errorf("previous file became %q (%v), want it untouched", data, readErr)
		case !replace && !errors.Is(readErr, fs.ErrNotExist):
			t.Errorf("a partial file appeared: %q", data)
		}

		assertNoTempFiles(t, dir)
	}
}

func TestWriteFileAtomic_RenameFailureLeavesNoPartialFile(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	// A non-empty directory at the target path makes rename(2) fail.
	target := filepath.Join(dir, "kubeconfig")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o700); err != nil {
		t.Fatal(err)
	}

	if err := identity.WriteFileAtomic(target, []byte("data"), true, nil); err == nil {
		t.Fatal("write over a directory succeeded")
	}

	assertNoTempFiles(t, dir)

	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the pre-existing entry", names)
	}
}

func TestWriteFileAtomic_ReplaceTightensMode(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")

	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := identity.WriteFileAtomic(path, []byte("new"), true, nil); err != nil {
		t.Fatal(err)
	}

	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode = %04o, want 0600", got)
	}

	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("content = %q", data)
	}

	assertNoTempFiles(t, dir)
}

func TestWriteFileAtomic_MissingDirectory(t *testing.T) {
	t.Parallel()

	err := identity.WriteFileAtomic(filepath.Join(t.TempDir(), "missing", "f"), []byte("x"), true, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error = %v, want fs.ErrNotExist", err)
	}
}
