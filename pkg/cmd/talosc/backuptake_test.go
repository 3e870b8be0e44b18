package talosc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/report"
)

// TestBackupTextfileFromTheRun: the textfile is written from the newest
// backup tc-nodes read back (the front door reaches no Swift container);
// a run that reported none writes backup_ok 0, saying why.
func TestBackupTextfileFromTheRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "backup.prom")
	o := &BackupOptions{Textfile: path}
	newest := &report.BackupCheck{Target: "swift container prod-backups", Name: "prod-20261206T061500Z.tar.age", AgeSeconds: 60, Verified: true}
	if err := o.writeTextfile("prod", newest, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, `talosc_backup_ok{cluster="prod"} 1`) || !strings.Contains(got, `talosc_backup_age_seconds{cluster="prod"} 60`) {
		t.Errorf("textfile from the run's newest backup:\n%s", got)
	}
	if err := o.writeTextfile("prod", nil, errors.New("tc-nodes: exit 1")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, `talosc_backup_ok{cluster="prod"} 0`) || strings.Contains(got, "age_seconds{") {
		t.Errorf("textfile of a run that reported nothing:\n%s", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
