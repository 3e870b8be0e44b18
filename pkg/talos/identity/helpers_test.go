package identity_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture copies testdata/name into a new temporary directory as
// talossecrets.yaml with the given mode and returns the directory.
func copyFixture(t *testing.T, name string, mode fs.FileMode) string {
	t.Helper()

	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "talossecrets.yaml")

	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile applies the umask; set the exact mode under test.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}

	return dir
}

// fileMode returns the permission bits of path.
func fileMode(t *testing.T, path string) fs.FileMode {
	t.Helper()

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	return info.Mode().Perm()
}

// dirNames lists the entries of dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}

	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}

	return names
}

// assertNoTempFiles fails when an atomic write left a temporary file behind.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()

	for _, n := range dirNames(t, dir) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("temporary file %s left behind in %s", n, dir)
		}
	}
}

// certFingerprint returns the hex SHA-256 of the DER of a PEM certificate.
func certFingerprint(t *testing.T, pemBytes []byte) string {
	t.Helper()

	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %.40q", pemBytes)
	}

	sum := sha256.Sum256(block.Bytes)

	return hex.EncodeToString(sum[:])
}
