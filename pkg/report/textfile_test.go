package report_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/report/reporttest"
)

func TestWriteTextfileIsAtomicAnd0644(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "talosc.prom")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteTextfile(path, fullReport()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("stat %v, mode %v: want 0644", err, fi.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := reporttest.Parse(f); err != nil {
		t.Fatalf("the written textfile does not parse: %v", err)
	}
	onlyFile(t, dir, "talosc.prom")
}

// A write that cannot finish leaves what was there and no temporary file.
func TestWriteTextfileFailureLeavesNoHalfFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "talosc.prom")
	if err := os.Mkdir(path, 0o755); err != nil { // rename over a directory fails
		t.Fatal(err)
	}
	if err := report.WriteTextfile(path, fullReport()); err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	onlyFile(t, dir, "talosc.prom")
	if err := report.WriteTextfile(filepath.Join(dir, "missing", "x.prom"), fullReport()); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func onlyFile(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		t.Fatalf("directory holds %v, want only %s", entries, name)
	}
}
