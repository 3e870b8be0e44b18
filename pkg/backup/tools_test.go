package backup_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/backup/snapshot"
	"github.com/talosc/talosc/pkg/backup/snapshot/snapshottest"
)

// needTool returns the path of a command the test runs. Without it the
// test skips on a workstation and fails in CI (CI set), which installs
// it (.ci/run).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "" {
		t.Skipf("%s not installed (apt-get install age etcd-client): %v", name, err)
	}
	t.Fatalf("%s not installed; CI must install it: %v", name, err)
	return ""
}

// run runs a command and returns its stdout; a failure fails the test.
func run(t *testing.T, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestBundleReadsWithDebianTools: a bundle is a plain age file holding a
// plain tar, and its snapshot.db is one etcd's own tools read: Debian's
// age decrypts it, tar unpacks it, etcdctl (3.4) reads the snapshot's
// revision and hash as snapshot.Verify did.
func TestBundleReadsWithDebianTools(t *testing.T) {
	t.Parallel()
	ageBin, tarBin, etcdctl := needTool(t, "age"), needTool(t, "tar"), needTool(t, "etcdctl")
	snap := snapshottest.Take(t, snapshottest.Keys(30))
	st, err := snapshot.Verify(snap)
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t)
	dir := t.TempDir()
	b := backup.Bundle{
		Meta: backup.Meta{
			Format: backup.Format, Cluster: "prod", Node: "prod-cp-01", Time: time.Now().UTC(),
			Revision: st.Revision, Keys: st.Keys, Hash: st.Hash, SnapshotSize: st.Size, SnapshotSHA256: st.SHA256,
			Files: []string{"cluster.yaml", "talossecrets.yaml"},
		},
		Snapshot: snap,
		Files:    map[string][]byte{"cluster.yaml": []byte("name: prod\n"), "talossecrets.yaml": []byte("secrets: {}\n")},
	}
	sealed := filepath.Join(dir, backup.Name("prod", b.Meta.Time))
	if err := os.WriteFile(sealed, seal(t, b, id.Recipient()), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "bundle.tar")
	run(t, nil, ageBin, "-d", "-i", keyFile, "-o", plain, sealed)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, nil, tarBin, "-xf", plain, "-C", out)
	if got := string(mustRead(t, filepath.Join(out, "files", "talossecrets.yaml"))); got != "secrets: {}\n" {
		t.Errorf("files/talossecrets.yaml = %q", got)
	}
	var meta backup.Meta
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "meta.json")), &meta); err != nil || meta.SnapshotSHA256 != st.SHA256 {
		t.Errorf("meta.json = %+v, %v; want snapshotSHA256 %s", meta, err, st.SHA256)
	}
	statusJSON := run(t, []string{"ETCDCTL_API=3"}, etcdctl, "snapshot", "status", "-w", "json", filepath.Join(out, "snapshot.db"))
	var status struct {
		Hash      uint32 `json:"hash"`
		Revision  int64  `json:"revision"`
		TotalKey  int64  `json:"totalKey"`
		TotalSize int64  `json:"totalSize"`
	}
	if err := json.Unmarshal(statusJSON, &status); err != nil {
		t.Fatalf("etcdctl snapshot status: %v\n%s", err, statusJSON)
	}
	// etcdctl 3.4's totalKey counts every entry of every bucket (each
	// revision of a key, the members, the meta), etcdutl 3.7's only the
	// live keys: the first is never fewer.
	if status.Revision != st.Revision || status.Hash != st.Hash || status.TotalKey < st.Keys {
		t.Errorf("etcdctl snapshot status = %+v, snapshot.Verify = %+v: want the same revision and hash", status, st)
	}
	t.Logf("etcdctl %+v; snapshot.Verify %+v", status, st)
}
