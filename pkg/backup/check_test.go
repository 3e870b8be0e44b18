package backup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/config"
)

// Check reports the newest bundle against backup.max_age: none yet, too
// old, and one whose stored bundle no longer matches its record each need
// attention; a fresh verified one does not; without a backup section
// there is nothing to report.
func TestCheck(t *testing.T) {
	t.Parallel()
	oneBundle := func(t *testing.T, dir string) {
		t.Helper()
		put(t, backup.Dir(dir), record("prod", bundleTime), "bundle")
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string) // the target directory
		age     time.Duration                  // of the newest bundle at the check
		want    string                         // part of Attention; "" is none
		checked bool                           // Verified
	}{
		{"none yet", func(*testing.T, string) {}, 0, "no backup yet", false},
		{"fresh", oneBundle, 10 * time.Minute, "", true},
		{"exactly max_age", oneBundle, time.Hour, "", true},
		{"older than max_age", oneBundle, 2 * time.Hour, "2h0m0s old, older than backup.max_age (1h0m0s)", true},
		{"changed since", func(t *testing.T, dir string) {
			t.Helper()
			oneBundle(t, dir)
			if err := os.WriteFile(filepath.Join(dir, backup.Name("prod", bundleTime)), []byte("BUNDLE"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, time.Minute, "does not match its record", false},
		{"unreadable target", func(t *testing.T, dir string) {
			t.Helper()
			if err := os.WriteFile(dir, []byte("a file"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 0, "the backup target cannot be read", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "backups")
			tc.setup(t, dir)
			cfg := &config.Cluster{Name: "prod", Dir: filepath.Dir(dir), Backup: &config.Backup{Dir: dir, MaxAge: "1h"}}
			got := backup.Check(t.Context(), cfg, nil, bundleTime.Add(tc.age))
			if got == nil || got.Target != dir || got.MaxAgeSeconds != 3600 {
				t.Fatalf("Check = %+v, want a report of %s with max age 3600 s", got, dir)
			}
			if (tc.want == "") != (got.Attention == "") || !strings.Contains(got.Attention, tc.want) || got.Verified != tc.checked {
				t.Errorf("attention %q verified %v, want %q verified %v", got.Attention, got.Verified, tc.want, tc.checked)
			}
			if tc.age > 0 && got.AgeSeconds != int64(tc.age/time.Second) {
				t.Errorf("age %d s, want %v", got.AgeSeconds, tc.age)
			}
		})
	}
	if b := backup.Check(t.Context(), &config.Cluster{Name: "prod"}, nil, bundleTime); b != nil {
		t.Errorf("without a backup section Check = %+v, want nil", b)
	}
}

// Stored reports the bundle a backup just stored and read back without
// reading the target again: a target that no longer exists still reads
// verified and fresh, with the record's facts.
func TestStored(t *testing.T) {
	t.Parallel()
	gone := filepath.Join(t.TempDir(), "gone")
	cfg := &config.Cluster{Name: "prod", Backup: &config.Backup{Dir: gone, MaxAge: "1h"}}
	rec := record("prod", bundleTime)
	rec.Meta.Revision, rec.Meta.Keys = 42, 7
	got := backup.Stored(cfg, gone, rec, bundleTime.Add(time.Minute))
	if !got.Verified || got.Attention != "" || got.Name != rec.Name || got.Revision != 42 || got.Keys != 7 || got.AgeSeconds != 60 || got.Target != gone {
		t.Errorf("Stored = %+v", got)
	}
}
