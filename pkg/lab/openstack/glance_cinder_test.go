package openstack_test

import (
	"crypto/md5" //nolint:gosec // Glance's checksum is MD5
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imageimport"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

func TestImageUploadAndImport(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	data := strings.Repeat("talos disk image ", 1000)
	md5sum, shasum := md5.Sum([]byte(data)), sha512.Sum512([]byte(data)) //nolint:gosec // as above

	img := must(images.Create(ctx, c.image, images.CreateOpts{
		Name: "talos-a", DiskFormat: "raw", ContainerFormat: "bare", MinDisk: 20,
		MinRAM: 2048, Tags: []string{"talos"},
	}).Extract()).ok(t)
	if img.Status != images.ImageStatusQueued || img.Visibility != images.ImageVisibilityShared {
		t.Errorf("new image %+v", img)
	}
	noErr(t, imagedata.Upload(ctx, c.image, img.ID, strings.NewReader(data)).ExtractErr())
	img = must(images.Get(ctx, c.image, img.ID).Extract()).ok(t)
	if img.Status != images.ImageStatusActive || img.SizeBytes != int64(len(data)) || img.Checksum != hex.EncodeToString(md5sum[:]) ||
		img.Properties["os_hash_value"] != hex.EncodeToString(shasum[:]) {
		t.Errorf("uploaded image %+v", img)
	}
	err := imagedata.Upload(ctx, c.image, img.ID, strings.NewReader(data)).ExtractErr()
	wantCode(t, err, http.StatusConflict, "Image status transition from active to saving is not allowed")
	// talosc sets hw_qemu_guest_agent on images that predate it.
	img = must(images.Update(ctx, c.image, img.ID, images.UpdateOpts{
		images.UpdateImageProperty{Op: images.AddOp, Name: "hw_qemu_guest_agent", Value: "yes"},
	}).Extract()).ok(t)
	if img.Properties["hw_qemu_guest_agent"] != "yes" {
		t.Errorf("properties %v", img.Properties)
	}

	staged := must(images.Create(ctx, c.image, images.CreateOpts{Name: "talos-b", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()).ok(t)
	err = imageimport.Create(ctx, c.image, staged.ID, imageimport.CreateOpts{Name: imageimport.GlanceDirectMethod}).ExtractErr()
	wantCode(t, err, http.StatusConflict, "needs to be staged")
	noErr(t, imagedata.Stage(ctx, c.image, staged.ID, strings.NewReader(data)).ExtractErr())
	noErr(t, imageimport.Create(ctx, c.image, staged.ID, imageimport.CreateOpts{Name: imageimport.GlanceDirectMethod}).ExtractErr())
	waitImage(t, c, staged.ID, images.ImageStatusActive)

	factory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/image/openstack-amd64.raw" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(data))
	}))
	t.Cleanup(factory.Close)
	web := must(images.Create(ctx, c.image, images.CreateOpts{Name: "talos-c", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()).ok(t)
	err = imageimport.Create(ctx, c.image, web.ID, imageimport.CreateOpts{Name: imageimport.WebDownloadMethod, URI: "https://factory.talos.dev/image/x"}).ExtractErr()
	wantCode(t, err, http.StatusBadRequest, "URI for web-download does not pass filtering")
	noErr(t, imageimport.Create(ctx, c.image, web.ID, imageimport.CreateOpts{Name: imageimport.WebDownloadMethod, URI: factory.URL + "/image/openstack-amd64.raw"}).ExtractErr())
	if got := waitImage(t, c, web.ID, images.ImageStatusActive); got.Checksum != hex.EncodeToString(md5sum[:]) {
		t.Errorf("web-download checksum %s", got.Checksum)
	}
	broken := must(images.Create(ctx, c.image, images.CreateOpts{Name: "talos-d", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()).ok(t)
	noErr(t, imageimport.Create(ctx, c.image, broken.ID, imageimport.CreateOpts{Name: imageimport.WebDownloadMethod, URI: factory.URL + "/missing"}).ExtractErr())
	if got := waitImage(t, c, broken.ID, images.ImageStatusQueued); got.Properties["os_glance_failed_import"] != "file" {
		t.Errorf("failed import %+v", got.Properties)
	}

	pages := must(images.List(c.image, images.ListOpts{Name: "talos-a"}).AllPages(ctx)).ok(t)
	if list, _ := images.ExtractImages(pages); len(list) != 1 || list[0].ID != img.ID {
		t.Errorf("by name: %+v", list)
	}
	pages = must(images.List(c.image, images.ListOpts{Tags: []string{"talos"}}).AllPages(ctx)).ok(t)
	if list, _ := images.ExtractImages(pages); len(list) != 1 {
		t.Errorf("by tag: %d", len(list))
	}
	pages = must(images.List(c.image, images.ListOpts{Limit: 1}).AllPages(ctx)).ok(t)
	if list, _ := images.ExtractImages(pages); len(list) != 4 {
		t.Errorf("paged: %d", len(list))
	}
	noErr(t, images.Delete(ctx, c.image, broken.ID).ExtractErr())
	_, err = images.Get(ctx, c.image, broken.ID).Extract()
	wantCode(t, err, http.StatusNotFound, "No image found")
}

func waitImage(t *testing.T, c clients, id string, status images.ImageStatus) *images.Image {
	t.Helper()
	var img *images.Image
	eventually(t, "image "+string(status), func() bool {
		var err error
		img, err = images.Get(t.Context(), c.image, id).Extract()
		return err == nil && img.Status == status
	})
	return img
}

func TestVolumes(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx := t.Context()
	fx := newFixture(t, c)
	_, err := volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 10, ImageID: fx.image}, nil).Extract()
	wantCode(t, err, http.StatusBadRequest, "cannot be smaller than the image minDisk size 20GB")
	v := must(volumes.Create(ctx, c.volume, volumes.CreateOpts{Name: "data", Size: 20, ImageID: fx.image}, nil).Extract()).ok(t)
	if v.Status != "creating" {
		t.Errorf("new volume %+v", v)
	}
	eventually(t, "available", func() bool {
		got, err := volumes.Get(ctx, c.volume, v.ID).Extract()
		return err == nil && got.Status == "available" && got.Bootable == "true" && got.VolumeImageMetadata["image_id"] == fx.image
	})
	pages := must(volumes.List(c.volume, volumes.ListOpts{Name: "data"}).AllPages(ctx)).ok(t)
	if list, _ := volumes.ExtractVolumes(pages); len(list) != 1 {
		t.Errorf("by name: %d", len(list))
	}
	noErr(t, lab.SetQuota("demo", openstack.Quota{Volumes: 1}))
	_, err = volumes.Create(ctx, c.volume, volumes.CreateOpts{Size: 1}, nil).Extract()
	wantCode(t, err, http.StatusRequestEntityTooLarge, "VolumeLimitExceeded")
	noErr(t, volumes.Delete(ctx, c.volume, v.ID, nil).ExtractErr())
	eventually(t, "gone", func() bool {
		_, err := volumes.Get(ctx, c.volume, v.ID).Extract()
		return err != nil
	})
}
