//go:build unix

package plugin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A plugin still open for writing (being installed, or a descriptor another
// goroutine's fork briefly inherited) fails exec with ETXTBSY; execute
// retries and succeeds once the writer is done.
func TestExecuteRetriesTextFileBusy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tc-busy")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = w.Close()
	}()
	res := execute(t.Context(), invocation{path: path, timeout: 10 * time.Second})
	if res.err != nil || string(res.stdout) != "ok\n" {
		t.Fatalf("execute = %q, %v; want a retry past ETXTBSY", res.stdout, res.err)
	}
}
