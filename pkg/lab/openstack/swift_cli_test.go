package openstack_test

import (
	"bytes"
	"crypto/md5" //nolint:gosec // Swift's ETag
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// TestSwiftOpenStackCLI drives the object API of the lab with Debian's
// openstack CLI (python3-openstackclient): container create and show,
// object create (its ETag the MD5), list with a prefix, show, save and
// delete.
func TestSwiftOpenStackCLI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openstack"); err != nil {
		if os.Getenv("TALOSC_REQUIRE_OPENSTACK_CLI") != "" {
			t.Fatal("the openstack CLI is not on PATH but TALOSC_REQUIRE_OPENSTACK_CLI is set")
		}
		t.Skip("the openstack CLI is not on PATH (apt-get install -y python3-openstackclient)")
	}
	lab := start(t, openstack.Config{})
	dir := t.TempDir()
	content := bytes.Repeat([]byte("bundle bytes "), 1000)
	file, saved := filepath.Join(dir, "prod-20261206T061500Z.tar.age"), filepath.Join(dir, "saved")
	noErr(t, os.WriteFile(file, content, 0o600))
	sum := md5.Sum(content) //nolint:gosec // Swift's ETag
	docs, stderr := osc(t, lab, "oslab-demo",
		"container create backups -f json",
		"object create backups "+file+" --name prod-20261206T061500Z.tar.age -f json",
		"object create backups "+file+" --name staging-20261206T061500Z.tar.age -f json",
		"object list backups --prefix prod- -f json",
		"object show backups prod-20261206T061500Z.tar.age -f json",
		"container show backups -f json",
		"object save backups prod-20261206T061500Z.tar.age --file "+saved,
		"object delete backups prod-20261206T061500Z.tar.age",
		"object list backups -f json",
	)
	if len(docs) != 7 { // save and delete print nothing
		t.Fatalf("%d JSON documents, want 7: %v\nstderr:\n%s", len(docs), docs, stderr)
	}
	if list, _ := docs[0]["list"].([]any); len(list) != 1 {
		t.Errorf("container create = %v", docs[0])
	}
	if list, _ := docs[3]["list"].([]any); len(list) != 1 || list[0].(map[string]any)["Name"] != "prod-20261206T061500Z.tar.age" {
		t.Errorf("object list --prefix prod- = %v, want the one prod object", docs[3])
	}
	if docs[4]["etag"] != hex.EncodeToString(sum[:]) || fmt.Sprint(docs[4]["content-length"]) != "13000" {
		t.Errorf("object show = %v, want the MD5 as ETag and 13000 bytes", docs[4])
	}
	if fmt.Sprint(docs[5]["object_count"]) != "2" || fmt.Sprint(docs[5]["bytes_used"]) != "26000" {
		t.Errorf("container show = %v, want 2 objects of 26000 bytes", docs[5])
	}
	if got, err := os.ReadFile(saved); err != nil || !bytes.Equal(got, content) {
		t.Errorf("object save wrote %d bytes, %v", len(got), err)
	}
	if list, _ := docs[6]["list"].([]any); len(list) != 1 || !strings.HasPrefix(list[0].(map[string]any)["Name"].(string), "staging-") {
		t.Errorf("object list after delete = %v", docs[6])
	}
}
