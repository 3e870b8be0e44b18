package openstack_test

import (
	"bytes"
	"cmp"
	"crypto/md5" //nolint:gosec // Glance's checksum is MD5
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// decompressed fetches spec's artifact and returns it decompressed.
func decompressed(t *testing.T, spec provider.ImageSpec) []byte {
	t.Helper()
	var xzData bytes.Buffer
	if _, err := spec.Fetch(t.Context(), &xzData); err != nil {
		t.Fatal(err)
	}
	r, err := xz.NewReader(&xzData)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestEnsureImage_CreatesOnceFromTheDecompressedArtifact(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	spec := imageSpec(t, "")
	if _, ok, err := l.cloud.FindImage(t.Context(), spec); ok || err != nil {
		t.Fatalf("FindImage before = %v, %v", ok, err)
	}
	plan := &provider.Plan{}
	img, err := l.cloud.EnsureImage(t.Context(), spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID == "" || img.Name != spec.Name || img.Status != "active" || len(plan.Changes()) != 1 || plan.Changes()[0].Kind != openstack.KindImage {
		t.Fatalf("image %+v, changes %+v", img, plan.Changes())
	}
	inv := l.lab.Inventory()
	if len(inv.Images) != 1 {
		t.Fatalf("%d images", len(inv.Images))
	}
	got := inv.Images[0]
	raw := decompressed(t, spec)
	sum := md5.Sum(raw) //nolint:gosec // compared with Glance's checksum
	if got.Size != int64(len(raw)) || got.Checksum != hex.EncodeToString(sum[:]) || !bytes.HasPrefix(raw, []byte("talosc-lab image\n")) {
		t.Errorf("glance holds %d bytes (md5 %s), want the %d decompressed bytes (md5 %x)", got.Size, got.Checksum, len(raw), sum)
	}
	props := got.Properties
	if got.DiskFormat != "raw" || got.ContainerFormat != "bare" || got.MinDisk != 20 || got.MinRAM != 2048 || got.Visibility != "private" ||
		props["hw_qemu_guest_agent"] != "yes" || props["talos_version"] != labTalos || props["talos_schematic"] != spec.SchematicID {
		t.Errorf("image %+v", got)
	}

	l.lab.Recorder().Reset()
	again := &provider.Plan{}
	img2, err := l.cloud.EnsureImage(t.Context(), spec, again)
	if err != nil || img2 != img || len(again.Changes()) != 0 {
		t.Fatalf("re-run = %+v, %v, changes %+v", img2, err, again.Changes())
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("re-run mutations: %+v", m)
	}
	if found, ok, err := l.cloud.FindImage(t.Context(), spec); !ok || err != nil || found != img {
		t.Errorf("FindImage = %+v, %v, %v", found, ok, err)
	}
}

func TestEnsureImage_DryRunMutatesNothing(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	spec := imageSpec(t, "")
	l.lab.Recorder().Reset()
	plan := &provider.Plan{DryRun: true}
	img, err := l.cloud.EnsureImage(t.Context(), spec, plan)
	if err != nil || img.ID != "" || img.Name != spec.Name || len(plan.Changes()) != 1 {
		t.Fatalf("dry run = %+v, %v, changes %+v", img, err, plan.Changes())
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
}

func TestEnsureImage_BrokenDownloadLeavesNoImage(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	whole := imageSpec(t, "")
	var xzData bytes.Buffer
	if _, err := whole.Fetch(t.Context(), &xzData); err != nil {
		t.Fatal(err)
	}
	half := xzData.Bytes()[:xzData.Len()/2]
	// A factory that announces the whole artifact and closes the
	// connection halfway, and one whose artifact is itself cut short.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(xzData.Len()))
		_, _ = w.Write(half)
	}))
	t.Cleanup(cut.Close)
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(half) }))
	t.Cleanup(short.Close)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"connection closed", cut.URL, "download openstack-amd64.raw.xz: download " + cut.URL},
		{"truncated xz", short.URL, "decompress openstack-amd64.raw.xz: "},
	} {
		spec := imageSpec(t, tc.url)
		_, err := l.cloud.EnsureImage(t.Context(), spec, &provider.Plan{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "create openstack:image "+spec.Name+": ") {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if imgs := l.lab.Inventory().Images; len(imgs) != 0 {
			t.Errorf("%s: left %+v", tc.name, imgs)
		}
	}
}

// A streamed upload cannot be replayed by the transport: a 503 on it
// starts the image over (a new record, a new download), and the failed
// record is gone.
func TestEnsureImage_StartsOverAfterATransientUploadFailure(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: labos.Glance, Method: http.MethodPut, Nth: 1, Status: http.StatusServiceUnavailable}}})
	l := newComputeLab(t, labos.Config{Injector: inj}, threeCPs)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	if imgs := l.lab.Inventory().Images; len(imgs) != 1 || imgs[0].ID != img.ID || img.Status != "active" {
		t.Errorf("images %+v, ensured %+v", imgs, img)
	}
	if !strings.Contains(l.logs.String(), "starting over (2 of 3)") {
		t.Errorf("no start-over logged:\n%s", l.logs)
	}
}

func TestEnsureImage_AddsTheGuestAgentToAnExistingImage(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	spec := imageSpec(t, "")
	// Images of an earlier talosc, which did not ask for the agent.
	for range 2 {
		img, err := images.Create(t.Context(), l.image, images.CreateOpts{
			Name: spec.Name, DiskFormat: "raw", ContainerFormat: "bare", Tags: []string{openstack.TagManagedBy},
			Properties: map[string]string{"talos_version": spec.TalosVersion, "talos_schematic": spec.SchematicID},
		}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if err := imagedata.Upload(t.Context(), l.image, img.ID, strings.NewReader("raw disk")).ExtractErr(); err != nil {
			t.Fatal(err)
		}
	}
	l.lab.Recorder().Reset()
	dry := &provider.Plan{DryRun: true}
	if _, err := l.cloud.EnsureImage(t.Context(), spec, dry); err != nil || len(dry.Changes()) != 1 || dry.Changes()[0].Action != "update" {
		t.Fatalf("dry run: %v, %+v", err, dry.Changes())
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("dry run mutations: %+v", m)
	}
	// The oldest by Glance's created_at (whole seconds), then the lowest id.
	oldest := slices.MinFunc(l.lab.Inventory().Images, func(a, b labos.Image) int {
		return cmp.Or(a.Created.Truncate(time.Second).Compare(b.Created.Truncate(time.Second)), strings.Compare(a.ID, b.ID))
	}).ID
	img, err := l.cloud.EnsureImage(t.Context(), spec, &provider.Plan{})
	if err != nil || img.ID != oldest {
		t.Fatalf("EnsureImage = %+v, %v; want the oldest, %s", img, err, oldest)
	}
	if !strings.Contains(l.logs.String(), `2 active glance images are named "`+spec.Name+`"`) {
		t.Errorf("no warning about the duplicate images: %q", l.logs)
	}
	for _, got := range l.lab.Inventory().Images {
		if want := map[bool]string{true: "yes"}[got.ID == oldest]; got.Properties["hw_qemu_guest_agent"] != want {
			t.Errorf("image %s: hw_qemu_guest_agent = %q, want %q", got.ID, got.Properties["hw_qemu_guest_agent"], want)
		}
	}
}
