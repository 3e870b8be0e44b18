package proxmox_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// labStorages is a cluster with node-local and shared storages, as the
// talosc Proxmox tests use them.
var labStorages = []proxmox.Storage{
	{ID: "local", Type: "dir", Content: []string{"iso", "vztmpl", "backup", "snippets"}},
	{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}},
	{ID: "cephfs", Type: "cephfs", Content: []string{"iso", "vztmpl"}, Shared: true},
	{ID: "old", Type: "nfs", Content: []string{"images"}, Shared: true, Disabled: true},
}

func TestStorageListingWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv := startLab(t, proxmox.Options{Storages: labStorages, Nodes: []proxmox.Node{{Name: "pve1"}, {Name: "pve2"}}})
	c, ctx := adminClient(t, srv), t.Context()
	sts, err := c.NodeRef("pve1").Storages(ctx)
	if err != nil {
		t.Fatalf("Storages: %v", err)
	}
	type row struct {
		Name, Content           string
		Shared, Enabled, Active int
		HasTotal                bool
	}
	var got []row
	for _, s := range sts {
		got = append(got, row{s.Name, s.Content, s.Shared, s.Enabled, s.Active, s.Total > 0})
	}
	want := []row{
		{"local", "backup,iso,snippets,vztmpl", 0, 1, 1, true},
		{"local-lvm", "images,rootdir", 0, 1, 1, true},
		{"cephfs", "iso,vztmpl", 1, 1, 1, true},
		{"old", "images", 1, 0, 0, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("storages (-want +got):\n%s", diff)
	}
	iso, err := c.NodeRef("pve1").StorageISO(ctx)
	if err != nil || iso.Name != "local" {
		t.Errorf("StorageISO = %v, %v", iso, err)
	}
	st := c.NodeRef("pve1").StorageRef("local-lvm")
	err = st.Ping(ctx)
	if err != nil || st.Content != "images,rootdir" || st.Type != "lvmthin" {
		t.Errorf("Storage(local-lvm) = %+v, %v", st, err)
	}
}

func TestUploadISOAndDeleteWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv := startLab(t, proxmox.Options{Storages: labStorages, Nodes: []proxmox.Node{{Name: "pve1"}, {Name: "pve2"}}})
	c, ctx := adminClient(t, srv), t.Context()
	data := bytes.Repeat([]byte("talos iso "), 1000)
	path := filepath.Join(t.TempDir(), "upload.iso")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	name := "taloscluster-cidata-0123456789ab.iso"
	local := c.NodeRef("pve1").StorageRef("local")
	w := waiter(t)
	w(local.UploadWithHash("iso", path, &name, hex.EncodeToString(sum[:]), "sha256"))

	content, err := local.GetContent(ctx)
	if err != nil {
		t.Fatalf("GetContent: %v", err)
	}
	if len(content) != 1 || content[0].Volid != "local:iso/"+name || content[0].Size != uint64(len(data)) || content[0].Format != "iso" {
		t.Errorf("content = %+v", content)
	}
	if got, ok := srv.Volume("pve1", "local:iso/"+name); !ok || !bytes.Equal(got, data) {
		t.Errorf("the lab does not hold the uploaded bytes")
	}
	// "local" is node-local: pve2 does not see pve1's file.
	if other, _ := c.NodeRef("pve2").StorageRef("local").GetContent(ctx); len(other) != 0 {
		t.Errorf("pve2 sees pve1's local volumes: %+v", other)
	}
	v, err := local.ISO(ctx, name)
	if err != nil {
		t.Fatalf("ISO: %v", err)
	}
	if v.Path != "/var/lib/vz/template/iso/"+name {
		t.Errorf("ISO path = %q", v.Path)
	}
	w(v.Delete(ctx))
	if _, err := local.ISO(ctx, name); !goproxmox.IsNotFound(err) {
		t.Errorf("ISO after delete: err = %v, want not found", err)
	}

	// A checksum mismatch fails the copy task; nothing lands.
	task, err := local.UploadWithHash("iso", path, &name, strings.Repeat("0", 64), "sha256")
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); !goproxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("bad checksum: err = %v", err)
	}
	// Wrong extensions and content types are parameter errors.
	if _, err := local.UploadWithName("iso", path, "talos.txt"); !goproxmox.IsBadRequest(err) {
		t.Errorf("wrong extension: err = %v, want 400", err)
	}
	if _, err := c.NodeRef("pve1").StorageRef("local-lvm").Upload("iso", path); !goproxmox.IsBadRequest(err) {
		t.Errorf("iso on an images-only storage: err = %v, want 400", err)
	}
}

func TestDownloadURLFromTheLabImageFactory(t *testing.T) {
	t.Parallel()
	f, err := imagefactory.Start(t.Context(), imagefactory.Options{Versions: []string{"v1.13.8"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	iso := bytes.Repeat([]byte("nocloud"), 5000)
	f.AddImage("376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba", "v1.13.8", "nocloud-amd64.iso", iso)
	url := f.URL + "/image/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba/v1.13.8/nocloud-amd64.iso"

	srv := startLab(t, proxmox.Options{Storages: labStorages, Nodes: []proxmox.Node{{Name: "pve1"}, {Name: "pve2"}}})
	c, ctx := adminClient(t, srv), t.Context()
	node := c.NodeRef("pve1")
	upid, err := node.StorageDownloadURL(ctx, &goproxmox.StorageDownloadURLOptions{Content: "iso", Storage: "cephfs", Filename: "talos-v1.13.8-nocloud-amd64.iso", URL: url})
	if err != nil {
		t.Fatalf("download-url: %v", err)
	}
	task := waiter(t)(goproxmox.NewTask(goproxmox.UPID(upid), c), nil)
	if task.Type != "download" || task.ID != "talos-v1.13.8-nocloud-amd64.iso" {
		t.Errorf("task %s: type %q id %q", task.UPID, task.Type, task.ID)
	}
	// cephfs is shared: every node sees the one file.
	for _, n := range []string{"pve1", "pve2"} {
		if got, ok := srv.Volume(n, "cephfs:iso/talos-v1.13.8-nocloud-amd64.iso"); !ok || !bytes.Equal(got, iso) {
			t.Errorf("%s: downloaded bytes missing or different", n)
		}
	}
	// The file exists now: PVE refuses to overwrite it.
	if _, err := node.StorageRef("cephfs").DownloadURL(ctx, "iso", "talos-v1.13.8-nocloud-amd64.iso", url); err == nil || !strings.Contains(err.Error(), "refusing to override existing file") {
		t.Errorf("second download: err = %v", err)
	}
	// A factory 404 fails the task, and no file appears.
	task, err = node.StorageRef("local").DownloadURL(ctx, "iso", "missing.iso", f.URL+"/image/none/v1.13.8/nocloud-amd64.iso")
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx, 2*time.Millisecond, 5*time.Second); !goproxmox.IsTaskFailed(err) || !strings.Contains(err.Error(), "download failed: 404") {
		t.Errorf("404 download: err = %v", err)
	}
	if _, ok := srv.Volume("pve1", "local:iso/missing.iso"); ok {
		t.Error("a failed download left a file")
	}
	// Only loopback URLs: the lab never dials anything else.
	for _, bad := range []string{"https://factory.talos.dev/image/x/v1.13.8/nocloud-amd64.iso", "http://localhost:1/x.iso", "http://10.0.0.1/x.iso"} {
		if _, err := node.StorageRef("local").DownloadURL(ctx, "iso", "x.iso", bad); !goproxmox.IsBadRequest(err) {
			t.Errorf("download from %s: err = %v, want 400", bad, err)
		}
	}
	if !slices.ContainsFunc(f.Recorder().Calls(), func(c labnet.Call) bool { return c.Method == http.MethodGet && c.Status == 200 }) {
		t.Errorf("the factory saw no GET from the node")
	}
}
