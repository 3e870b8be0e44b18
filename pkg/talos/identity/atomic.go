package identity

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/talosc/talosc/pkg/atomicfile"
)

// SecretFileMode is the mode of every file this package writes: they all
// hold credentials.
const SecretFileMode fs.FileMode = 0o600

// writeOptions tunes writeFileAtomic.
type writeOptions struct {
	// replace allows an existing file at the target path to be replaced.
	replace bool
	// beforeCommit, when set, runs before the temporary file is moved
	// into place (tests simulate a failure at the last moment with it).
	beforeCommit func(tmp string) error
}

// writeFileAtomic writes a credentials file atomically, 0600 from the
// start (atomicfile.Write).
func writeFileAtomic(path string, data []byte, o writeOptions) error {
	return atomicfile.Write(path, data, atomicfile.Options{Mode: SecretFileMode, Replace: o.replace, BeforeCommit: o.beforeCommit})
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
