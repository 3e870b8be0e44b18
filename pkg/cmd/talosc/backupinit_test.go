package talosc

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
)

// scaffoldDir is a cluster directory as init leaves it (no plugins).
func scaffoldDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if code, stderr := runFrontDoor(t, dir, "init", "prod"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	return dir
}

// runFrontDoor runs kubectl-talosc with args on the cluster directory dir,
// with no plugins on PATH, and returns the exit code and stderr.
func runFrontDoor(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	s, _, out, errOut := genericiooptions.NewTestIOStreams()
	g := &Globals{Streams: s, Host: Host{Environ: []string{"NO_COLOR=1"}}, Dir: dir}
	root := &cobra.Command{Use: "kubectl-talosc"}
	root.AddCommand(newInitCommand(g, nil), newBackupCommand(g, nil))
	code := cli.Run(root, args, s)
	if out.Len() > 0 {
		t.Errorf("stdout is not empty: %q", out)
	}
	return code, errOut.String()
}

// snapshot is every file under dir with its mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files[p] = fi.Mode().String() + "\n" + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestBackupInit: the identity is 0600 and Debian's age decrypts with it
// what is encrypted to the recipient added to cluster.yaml; cluster.yaml
// keeps every line it had and loads; the secret key is never printed; the
// scaffold's .gitignore needs nothing more.
func TestBackupInit(t *testing.T) {
	t.Parallel()
	dir := scaffoldDir(t)
	before, err := os.ReadFile(filepath.Join(dir, config.ClusterFile))
	if err != nil {
		t.Fatal(err)
	}
	ignoreBefore, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	code, stderr := runFrontDoor(t, dir, "backup", "init")
	if code != 0 {
		t.Fatalf("backup init: exit %d\n%s", code, stderr)
	}
	if ignore, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); !bytes.Equal(ignore, ignoreBefore) {
		t.Errorf("the scaffold's .gitignore (*.agekey, backups/) already covers both, yet it became:\n%s", ignore)
	}
	c, err := config.Load(dir, config.LoadOptions{})
	if err != nil {
		t.Fatalf("the edited configuration does not load: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, config.ClusterFile))
	if !bytes.HasPrefix(after, before) || c.Backup == nil || len(c.Backup.Recipients) != 1 {
		t.Fatalf("cluster.yaml lost lines or has no recipient:\n%s", after)
	}
	recipient := c.Backup.Recipients[0]
	identity := filepath.Join(dir, config.BackupIdentityFile)
	fi, err := os.Stat(identity)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity: %v, mode %v", err, fi.Mode())
	}
	key, _ := os.ReadFile(identity)
	ids, err := age.ParseIdentities(bytes.NewReader(key))
	if err != nil || len(ids) != 1 || ids[0].(*age.X25519Identity).Recipient().String() != recipient {
		t.Fatalf("identity %v does not match recipient %s", err, recipient)
	}
	secret := ids[0].(*age.X25519Identity).String()
	for _, want := range []string{"recipient (public, fine to share): " + recipient, "copy " + identity + " off this machine", "a restore needs it"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, secret) || strings.Contains(stderr, "AGE-SECRET-KEY") {
		t.Errorf("stderr shows the secret key:\n%s", stderr)
	}
	ageRoundTrip(t, recipient, identity)
}

// ageRoundTrip encrypts with Debian's age to recipient and decrypts with
// the identity file.
func ageRoundTrip(t *testing.T, recipient, identity string) {
	t.Helper()
	ageBin, err := exec.LookPath("age")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("no age on PATH (apt-get install age); CI has it")
		}
		t.Fatal("CI needs Debian's age: apt-get install age")
	}
	const msg = "etcd snapshot stand-in\n"
	enc := exec.CommandContext(t.Context(), ageBin, "-e", "-r", recipient)
	enc.Stdin = strings.NewReader(msg)
	sealed, err := enc.Output()
	if err != nil {
		t.Fatalf("age -e: %v", err)
	}
	dec := exec.CommandContext(t.Context(), ageBin, "-d", "-i", identity)
	dec.Stdin = bytes.NewReader(sealed)
	opened, err := dec.Output()
	if err != nil || string(opened) != msg {
		t.Fatalf("age -d: %v, %q", err, opened)
	}
}

// TestBackupInitRefusesASecondIdentity: a second run refuses and changes
// nothing.
func TestBackupInitRefusesASecondIdentity(t *testing.T) {
	t.Parallel()
	dir := scaffoldDir(t)
	if code, stderr := runFrontDoor(t, dir, "backup", "init"); code != 0 {
		t.Fatalf("backup init: exit %d\n%s", code, stderr)
	}
	before := snapshot(t, dir)
	code, stderr := runFrontDoor(t, dir, "backup", "init")
	if code != 1 || !strings.Contains(stderr, "backup.agekey exists; backup init never overwrites an identity") {
		t.Fatalf("second backup init: exit %d\n%s", code, stderr)
	}
	if d := cmp.Diff(before, snapshot(t, dir)); d != "" {
		t.Errorf("the second run changed files (-before +after):\n%s", d)
	}
}

// TestBackupInitDryRun writes nothing and says what it would.
func TestBackupInitDryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte("name: x # mine\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	code, stderr := runFrontDoor(t, dir, "backup", "init", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"[dry-run] create the age identity " + filepath.Join(dir, "backup.agekey") + " (mode 0600)",
		"[dry-run] add its recipient to backup.recipients in ",
		"[dry-run] add backup.agekey, backups/ to " + filepath.Join(dir, ".gitignore"),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if d := cmp.Diff(before, snapshot(t, dir)); d != "" {
		t.Errorf("a dry run changed files (-before +after):\n%s", d)
	}
}

// TestBackupInitFilesAndModes: an identity named with --identity outside
// the cluster directory stays out of its .gitignore; an edited cluster.yaml
// keeps its mode; .gitignore gets the backups directory.
func TestBackupInitFilesAndModes(t *testing.T) {
	t.Parallel()
	dir, keys := t.TempDir(), t.TempDir()
	clusterYAML := filepath.Join(dir, config.ClusterFile)
	if err := os.WriteFile(clusterYAML, []byte("backup:\n  # recipients: []\n  dir: /srv/b\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	identity := filepath.Join(keys, "prod.key")
	if code, stderr := runFrontDoor(t, dir, "backup", "init", "--identity", identity); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	fi, err := os.Stat(clusterYAML)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("cluster.yaml mode %v (%v), want 0640", fi.Mode(), err)
	}
	if fi, err := os.Stat(identity); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("identity %v", err)
	}
	ignore, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if string(ignore) != "# added by talosc backup init\nbackups/\n" {
		t.Errorf(".gitignore:\n%s", ignore)
	}
}

// TestBackupInitRemovesTheIdentityWhenTheConfigCannotBeWritten: an
// identity whose recipient never reached the configuration is removed, so a
// second run is not refused for it.
func TestBackupInitRemovesTheIdentityWhenTheConfigCannotBeWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _, _, _ := genericiooptions.NewTestIOStreams()
	sess := &session{g: &Globals{Streams: s}, dir: dir}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	identity := filepath.Join(dir, config.BackupIdentityFile)
	edit := &config.RecipientEdit{File: config.ClusterFile, Path: filepath.Join(dir, "gone", config.ClusterFile), Mode: 0o644}
	err = sess.writeBackupIdentity(identity, id, edit)
	if err == nil || !strings.Contains(err.Error(), "the new identity, never used, was removed") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(identity); !os.IsNotExist(err) {
		t.Errorf("the identity is still there: %v", err)
	}
}

// TestBackupCommandGroup: backup's help lists init; backup itself takes a
// backup with its flags.
func TestBackupCommandGroup(t *testing.T) {
	t.Parallel()
	s, _, out, _ := genericiooptions.NewTestIOStreams()
	if code := cli.Run(NewRoot(s), []string{"backup", "--help"}, s); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "init        Make the age identity") {
		t.Errorf("help:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want BackupOptions
		code int
	}{
		{args: nil, want: BackupOptions{Output: "text"}},
		{args: []string{"-o", "json", "--textfile", "b.prom", "-v"}, want: BackupOptions{Output: "json", Textfile: "b.prom", Verbose: true}},
		{args: []string{"-o", "xml"}, code: 2},
		{args: []string{"extra"}, code: 2},
	} {
		var got *BackupOptions
		cmd := newBackupCommand(&Globals{}, func(_ context.Context, o *BackupOptions) error { got = o; return nil })
		code, stderr := execute(t, cmd, tc.args...)
		if code != tc.code {
			t.Fatalf("%v: exit %d, want %d: %s", tc.args, code, tc.code, stderr)
		}
		if tc.code == 0 && (got.Output != tc.want.Output || got.Textfile != tc.want.Textfile || got.Verbose != tc.want.Verbose) {
			t.Errorf("%v: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

func TestBackupInitCommandFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want BackupInitOptions
		code int
	}{
		{args: nil, want: BackupInitOptions{}},
		{args: []string{"--identity", "k/prod.agekey", "--dry-run"}, want: BackupInitOptions{Identity: "k/prod.agekey", DryRun: true}},
		{args: []string{"extra"}, code: 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var got *BackupInitOptions
			cmd := newBackupInitCommand(&Globals{}, func(_ context.Context, o *BackupInitOptions) error { got = o; return nil })
			code, stderr := execute(t, cmd, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if tc.code != 0 {
				return
			}
			got.Globals = nil
			if d := cmp.Diff(tc.want, *got); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
		})
	}
}
