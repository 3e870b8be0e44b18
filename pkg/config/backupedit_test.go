package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

// TestAddBackupRecipient_Layouts: the recipient is added by editing the
// text, whatever shape the section has; everything else, comments and
// alignment included, stays byte for byte.
func TestAddBackupRecipient_Layouts(t *testing.T) {
	t.Parallel()
	const r = "age1new"
	for _, tc := range []struct{ name, in, want string }{
		{"no section", "name: x   # the name\n", "name: x   # the name\n\nbackup:\n  recipients:\n    - age1new\n"},
		{"no final newline", "name: x", "name: x\n\nbackup:\n  recipients:\n    - age1new\n"},
		{"only comments", "# nothing yet\n", "# nothing yet\n\nbackup:\n  recipients:\n    - age1new\n"},
		{"crlf", "name: x\r\n", "name: x\r\n\r\nbackup:\r\n  recipients:\r\n    - age1new\r\n"},
		{"empty section", "backup:\n  # keep: {}\nname: x\n", "backup:\n  recipients:\n    - age1new\n  # keep: {}\nname: x\n"},
		{"explicit null", "backup: ~   # later\nname: x\n", "backup:    # later\n  recipients:\n    - age1new\nname: x\n"},
		{"section without recipients", "backup:\n    dir: b    # here\nname: x\n", "backup:\n    recipients:\n      - age1new\n    dir: b    # here\nname: x\n"},
		{"flow section", "backup: {dir: b}\n", "backup: {recipients: [age1new], dir: b}\n"},
		{"empty flow section", "backup: {}\n", "backup: {recipients: [age1new]}\n"},
		{"null recipients", "backup:\n  recipients:\n  dir: b\n", "backup:\n  recipients:\n    - age1new\n  dir: b\n"},
		{"block list", "backup:\n  recipients:\n  - age1old   # laptop\n  dir: b\n", "backup:\n  recipients:\n  - age1new\n  - age1old   # laptop\n  dir: b\n"},
		{"indented block list", "backup:\n  recipients:\n    - age1old\n", "backup:\n  recipients:\n    - age1new\n    - age1old\n"},
		{"flow list", "backup:\n  recipients: [age1old]  # x\n", "backup:\n  recipients: [age1new, age1old]  # x\n"},
		{"empty flow list", "backup:\n  recipients: []\n", "backup:\n  recipients: [age1new]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDir(t, map[string]string{config.ClusterFile: tc.in})
			e, err := config.AddBackupRecipient(dir, r)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, string(e.Data)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if e.File != config.ClusterFile || e.Mode != 0o600 {
				t.Errorf("file %q mode %04o", e.File, e.Mode)
			}
		})
	}
}

// TestAddBackupRecipient_Refuses: a shape the edit cannot handle is refused
// with the file named and the fix, never written oddly.
func TestAddBackupRecipient_Refuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"not a mapping", "backup: 3\n", "cluster.yaml: backup is not a mapping; add age1new to backup.recipients there by hand"},
		{"not a list", "backup: {recipients: age1old}\n", "cluster.yaml: backup.recipients is not a list"},
		{"flow top level", "{name: x}\n", "cluster.yaml: the file is not a block mapping of keys"},
		{"document end", "name: x\n...\n", "cluster.yaml: its layout is one talosc cannot edit safely"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.AddBackupRecipient(writeDir(t, map[string]string{config.ClusterFile: tc.in}), "age1new")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	_, err := config.AddBackupRecipient(t.TempDir(), "age1new")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no cluster.yaml: %v", err)
	}
}

// TestAddBackupRecipient_IncludeFiles: the file that lists recipients gets
// the new one (the merge refuses a list set in two files); else the first
// with a backup section.
func TestAddBackupRecipient_IncludeFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cluster string
		secrets string
		want    string
	}{
		{"recipients in the include", "backup: {dir: b}\n", "backup:\n  recipients: [age1old]\n", config.SecretsFile},
		{"section only in the include", "name: x\n", "backup: {dir: b}\n", config.SecretsFile},
		{"sections in both", "backup:\n  dir: b\n", "backup: {keep: {hourly: 1}}\n", config.ClusterFile},
		{"none", "name: x\n", "openstack: {}\n", config.ClusterFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDir(t, map[string]string{
				config.ClusterFile: "include: [secrets.yaml]\n" + tc.cluster,
				config.SecretsFile: tc.secrets,
			})
			e, err := config.AddBackupRecipient(dir, "age1new")
			if err != nil {
				t.Fatal(err)
			}
			real, _ := filepath.EvalSymlinks(filepath.Join(dir, tc.want))
			if e.File != tc.want || e.Path != real || !strings.Contains(string(e.Data), "age1new") {
				t.Errorf("edit %s (%s), want %s:\n%s", e.File, e.Path, tc.want, e.Data)
			}
		})
	}
}

// TestAddBackupRecipient_ThroughSymlink: a symlinked cluster.yaml is
// edited at its target, so writing the edit keeps the link.
func TestAddBackupRecipient_ThroughSymlink(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{"real/cluster.yaml": "name: x\n", config.ClusterFile: "symlink:real/cluster.yaml"})
	if err := os.Chmod(filepath.Join(dir, "real", "cluster.yaml"), 0o640); err != nil {
		t.Fatal(err)
	}
	e, err := config.AddBackupRecipient(dir, "age1new")
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "real", "cluster.yaml"))
	if e.Path != real || e.Mode != 0o640 {
		t.Errorf("path %s mode %04o, want %s 0640", e.Path, e.Mode, real)
	}
}

// TestAddBackupRecipient_EmptyFile: an empty cluster.yaml gets the section
// and no blank line before it.
func TestAddBackupRecipient_EmptyFile(t *testing.T) {
	t.Parallel()
	e, err := config.AddBackupRecipient(writeDir(t, map[string]string{config.ClusterFile: ""}), "age1new")
	if err != nil || string(e.Data) != "backup:\n  recipients:\n    - age1new\n" {
		t.Fatalf("%v:\n%s", err, e.Data)
	}
}
