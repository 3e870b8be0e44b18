package identity_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

func TestEnsure_GeneratesForNewCluster(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()

	id, created, err := identity.Ensure(t.Context(), dir, "v1.13.0", nil, false)
	if err != nil {
		t.Fatal(err)
	}

	if !created {
		t.Error("created = false for a brand-new cluster")
	}

	path := filepath.Join(dir, config.TalosSecretsFile)
	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode = %04o, want 0600", got)
	}

	loaded, err := identity.Load(path)
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(id.TalosCA(), loaded.TalosCA()) {
		t.Error("the saved identity differs from the returned one")
	}

	if _, ok := loaded.DiskEncryptionPassphrase(); !ok {
		t.Error("a new cluster's identity has no disk-encryption passphrase")
	}

	if diff := cmp.Diff([]string{config.TalosSecretsFile}, dirNames(t, dir)); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}

	// A second run loads the same file: never regenerated.
	again, created, err := identity.Ensure(t.Context(), dir, "v1.13.0", nil, false)
	if err != nil {
		t.Fatal(err)
	}

	if created || !bytes.Equal(again.TalosCA(), id.TalosCA()) {
		t.Errorf("second Ensure: created=%v, same CA=%v; want the existing identity", created,
			bytes.Equal(again.TalosCA(), id.TalosCA()))
	}
}

func TestEnsure_LoadsExistingAndNeverRewrites(t *testing.T) {
	t.Parallel()

	for _, machines := range [][]string{nil, {"demo-controlplane-01"}} {
		for _, dryRun := range []bool{false, true} {
			dir := copyFixture(t, "talossecrets-legacy.yaml", 0o600)
			path := filepath.Join(dir, config.TalosSecretsFile)

			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			id, created, err := identity.Ensure(t.Context(), dir, "v1.14.0", machines, dryRun)
			if err != nil {
				t.Fatal(err)
			}

			if created {
				t.Error("created = true for an existing identity")
			}

			if _, ok := id.DiskEncryptionPassphrase(); ok {
				t.Error("an older identity gained a disk-encryption passphrase")
			}

			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}

			if !bytes.Equal(before, after) {
				t.Error("Ensure rewrote an existing identity")
			}

			if len(id.Notes()) != 0 {
				t.Errorf("unexpected notes: %q", id.Notes())
			}
		}
	}
}

func TestEnsure_TightensBroaderMode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		mode    fs.FileMode
		dryRun  bool
		want    fs.FileMode
		wantMsg string
	}{
		{0o644, false, 0o600, "tightened the mode of"},
		{0o640, false, 0o600, "from 0640 to 0600"},
		{0o604, false, 0o600, "from 0604 to 0600"},
		{0o666, false, 0o600, "from 0666 to 0600"},
		{0o400, false, 0o400, ""},
		{0o600, false, 0o600, ""},
		{0o644, true, 0o644, "has mode 0644; converge will tighten it to 0600"},
	}

	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			t.Parallel()

			dir := copyFixture(t, "talossecrets.yaml", tt.mode)

			id, _, err := identity.Ensure(t.Context(), dir, "v1.13", nil, tt.dryRun)
			if err != nil {
				t.Fatal(err)
			}

			if got := fileMode(t, filepath.Join(dir, config.TalosSecretsFile)); got != tt.want {
				t.Errorf("mode = %04o, want %04o", got, tt.want)
			}

			notes := strings.Join(id.Notes(), "\n")
			if tt.wantMsg == "" && notes != "" || !strings.Contains(notes, tt.wantMsg) {
				t.Errorf("notes = %q, want %q", notes, tt.wantMsg)
			}
		})
	}
}

func TestEnsure_RefusesMissingIdentityWithMachines(t *testing.T) {
	t.Parallel()

	const want = "talossecrets.yaml is missing but 3 machine(s) exist (demo-controlplane-01, " +
		"demo-controlplane-02, demo-workers-01). This file is the cluster's irreplaceable identity " +
		"(CA + tokens) and cannot be regenerated for an existing cluster -- restore it from backup."

	machines := []string{"demo-workers-01", "demo-controlplane-01", "demo-controlplane-02"}

	for _, dryRun := range []bool{false, true} {
		dir := t.TempDir()

		id, created, err := identity.Ensure(t.Context(), dir, "v1.13", machines, dryRun)
		if id != nil || created {
			t.Errorf("dryRun=%v: got an identity (created=%v) despite existing machines", dryRun, created)
		}

		var missing *identity.MissingIdentityError
		if !errors.As(err, &missing) {
			t.Fatalf("dryRun=%v: error = %v, want *MissingIdentityError", dryRun, err)
		}

		if err.Error() != want {
			t.Errorf("message:\n got %s\nwant %s", err, want)
		}

		if missing.Path != filepath.Join(dir, config.TalosSecretsFile) {
			t.Errorf("Path = %s", missing.Path)
		}

		if names := dirNames(t, dir); len(names) != 0 {
			t.Errorf("dryRun=%v: wrote %v", dryRun, names)
		}
	}

	if machines[0] != "demo-workers-01" {
		t.Error("Ensure reordered the caller's slice")
	}
}

func TestEnsure_DryRunWritesNothing(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()

	id, created, err := identity.Ensure(t.Context(), dir, "v1.13", nil, true)
	if err != nil {
		t.Fatal(err)
	}

	if !created || id == nil {
		t.Fatalf("dry run: created=%v id=%v, want an in-memory identity", created, id)
	}

	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("dry run wrote %v", names)
	}

	if notes := strings.Join(id.Notes(), "\n"); !strings.Contains(notes, "dry run: nothing written") {
		t.Errorf("notes = %q", notes)
	}
}

func TestEnsure_CancelledWritesNothing(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	if _, _, err := identity.Ensure(ctx, dir, "v1.13", nil, false); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}

	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("cancelled Ensure wrote %v", names)
	}
}

func TestEnsure_Errors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		version string
		want    string
	}{
		{
			name: "identity is a directory",
			setup: func(t *testing.T, dir string) {
				t.Helper()

				if err := os.Mkdir(filepath.Join(dir, config.TalosSecretsFile), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			version: "v1.13",
			want:    "is not a regular file",
		},
		{
			name: "corrupt identity is not replaced",
			setup: func(t *testing.T, dir string) {
				t.Helper()

				if err := os.WriteFile(filepath.Join(dir, config.TalosSecretsFile), []byte("cluster: [\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			version: "v1.13",
			want:    "load cluster identity",
		},
		{
			name:    "bad version",
			setup:   func(*testing.T, string) {},
			version: "banana",
			want:    `invalid Talos version "banana"`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			dir := t.TempDir()
			tt.setup(t, dir)
			before := dirNames(t, dir)

			_, _, err := identity.Ensure(t.Context(), dir, tt.version, nil, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}

			if diff := cmp.Diff(before, dirNames(t, dir)); diff != "" {
				t.Errorf("directory changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCheckRecoverable(t *testing.T) {
	t.Parallel()

	withFile := copyFixture(t, "talossecrets.yaml", 0o600)
	empty := t.TempDir()
	corrupt := t.TempDir()

	if err := os.WriteFile(filepath.Join(corrupt, config.TalosSecretsFile), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		dir      string
		machines []string
		missing  bool
	}{
		{"new cluster", empty, nil, false},
		{"new cluster, empty list", empty, []string{}, false},
		{"machines without identity", empty, []string{"demo-controlplane-01"}, true},
		{"machines with identity", withFile, []string{"demo-controlplane-01"}, false},
		// Presence is what matters here; a broken file fails later, at load.
		{"machines with corrupt identity", corrupt, []string{"demo-controlplane-01"}, false},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := identity.CheckRecoverable(tt.dir, tt.machines)

			var missing *identity.MissingIdentityError
			if got := errors.As(err, &missing); got != tt.missing {
				t.Fatalf("CheckRecoverable error = %v, want missing=%v", err, tt.missing)
			}

			if !tt.missing && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}

			if tt.missing && !strings.Contains(err.Error(), "1 machine(s) exist (demo-controlplane-01)") {
				t.Errorf("message does not name the machines: %v", err)
			}
		})
	}
}
