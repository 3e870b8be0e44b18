package imagefactory_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/releases"
	"github.com/talosc/talosc/pkg/talos/factory"
)

func start(t *testing.T, knobs labnet.Knobs) *imagefactory.Factory {
	t.Helper()
	f, err := imagefactory.Start(t.Context(), imagefactory.Options{Versions: []string{"v1.13.8", "v1.14.1"}, Injector: labnet.NewInjector(knobs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestFactoryServesWhatTalosAsksFor(t *testing.T) {
	t.Parallel()
	f := start(t, labnet.Knobs{})
	c, err := factory.New(f.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
	if err != nil {
		t.Fatal(err)
	}
	exts, ok := f.Extensions(id)
	if diff := cmp.Diff([]string{factory.ExtensionQEMUGuestAgent, factory.ExtensionTailscale}, exts); !ok || diff != "" {
		t.Fatalf("Extensions(%s) (-want +got):\n%s", id, diff)
	}
	versions, err := c.Versions(t.Context())
	if err != nil || len(versions) != 2 {
		t.Fatalf("Versions = %v, %v", versions, err)
	}
	var a, b bytes.Buffer
	if _, _, err := c.Download(t.Context(), id, "v1.13.8", factory.ArtifactNoCloudISO, &a, 4096, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Download(t.Context(), id, "v1.13.8", factory.ArtifactNoCloudISO, &b, -1, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || !strings.Contains(a.String(), "artifact: nocloud-amd64.iso") {
		t.Fatalf("artifacts are not deterministic or do not say what they are")
	}
	// An unknown version or schematic is a 404, as on the real factory for
	// schematics it has never seen.
	if _, _, err := c.Download(t.Context(), id, "v9.9.9", factory.ArtifactNoCloudISO, io.Discard, -1, ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown version: %v", err)
	}
	if got := f.Recorder().Counts(nil)["imagefactory POST /schematics"]; got != 1 {
		t.Fatalf("recorded %d schematic creations", got)
	}
}

func TestFactoryServesXZArtifactsAsRealXZ(t *testing.T) {
	t.Parallel()
	f := start(t, labnet.Knobs{})
	c, err := factory.New(f.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	for _, dst := range []*bytes.Buffer{&a, &b} {
		if _, _, err := c.Download(t.Context(), id, "v1.14.1", factory.ArtifactOpenStack, dst, -1, ""); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the xz artifact is not deterministic")
	}
	r, err := xz.NewReader(&a)
	if err != nil {
		t.Fatalf("%s is not an xz stream: %v", factory.ArtifactOpenStack, err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decompress %s: %v", factory.ArtifactOpenStack, err)
	}
	if len(raw) != 4096 || !strings.Contains(string(raw), "artifact: "+factory.ArtifactOpenStack) {
		t.Fatalf("decompressed %d bytes not naming the artifact:\n%.120q", len(raw), raw)
	}
}

func TestFactoryFaults(t *testing.T) {
	t.Parallel()
	f := start(t, labnet.Knobs{Faults: []labnet.Fault{{Service: imagefactory.Service, Method: http.MethodGet, PathPrefix: "/versions", Nth: 1, Status: http.StatusBadGateway}}})
	c, err := factory.New(f.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The client asks again after the injected 502.
	if _, err := c.Versions(t.Context()); err != nil {
		t.Fatalf("Versions: %v", err)
	}
	if got := f.Recorder().Counts(nil)["imagefactory GET /versions"]; got != 2 {
		t.Fatalf("%d GET /versions, want the 502 and the answer", got)
	}
}

func TestFactoryStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	f, err := imagefactory.Start(ctx, imagefactory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	c, _ := factory.New(f.URL, factory.Options{})
	for range 100 {
		if _, err := c.Versions(t.Context()); err != nil {
			return
		}
	}
	t.Fatal("the factory still answers after its context ended")
}

// The lab's kubelet repository lists the releases of the upgrade path its
// clusters take, several patches a minor: v1.34.3 steps through v1.35.4,
// the newest v1.35 patch, to v1.36.1, with a newer minor beyond.
func TestKubeletRepositoryListsTheUpgradePath(t *testing.T) {
	t.Parallel()
	f := start(t, labnet.Knobs{})
	versions, err := releases.KubernetesVersions(t.Context(), nil, f.KubeletRepositoryURL())
	if err != nil {
		t.Fatal(err)
	}
	newest, patches := map[string]config.Version{}, map[string]int{}
	for _, s := range versions {
		v, err := config.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		minor := "v" + v.MinorString()
		patches[minor]++
		if p, ok := newest[minor]; !ok || v.Compare(p) > 0 {
			newest[minor] = v
		}
	}
	got := map[string]string{}
	for minor, v := range newest {
		got[minor] = v.String()
	}
	if d := cmp.Diff(map[string]string{"v1.34": "v1.34.3", "v1.35": "v1.35.4", "v1.36": "v1.36.1", "v1.37": "v1.37.0"}, got); d != "" {
		t.Errorf("newest patch of each minor (-want +got):\n%s", d)
	}
	for _, minor := range []string{"v1.34", "v1.35", "v1.36"} {
		if patches[minor] < 2 {
			t.Errorf("%s has %d releases, want several", minor, patches[minor])
		}
	}
}
