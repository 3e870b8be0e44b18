package lab_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestOpenStackServerRunsItsGlanceImage: a server booted from a Glance
// image talosc made from the Image Factory's OpenStack artifact (here of
// another schematic and Talos version than its machine config's installer)
// runs that image's Talos and schematic, found by the image's checksum.
func TestOpenStackServerRunsItsGlanceImage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.84.0/24", 1, 0)

	fc, err := factory.New(l.Factory.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schematic, err := fc.CreateSchematic(ctx, factory.SchematicFor([]string{factory.ExtensionQEMUGuestAgent}))
	if err != nil {
		t.Fatal(err)
	}
	var artifact bytes.Buffer
	if _, _, err := fc.Download(ctx, schematic, lab.NewestTalosVersion, factory.ArtifactOpenStack, &artifact, -1, ""); err != nil {
		t.Fatal(err)
	}
	raw, err := xz.NewReader(&artifact)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: l.OpenStack.AuthURL(), Username: "demo", Password: openstack.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	imagec, err := gos.NewImageV2(pc, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Create(ctx, imagec, images.CreateOpts{Name: "talos-base", DiskFormat: "raw", ContainerFormat: "bare"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := imagedata.Upload(ctx, imagec, img.ID, io.Reader(raw)).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	c.imageID = img.ID

	_, addr := c.boot(c.cfg.Hostnames()[0])
	eventually(t, "the node runs the Glance image's Talos", 10*time.Second, func() error {
		n, ok := l.Fleet().Node(netip.MustParseAddr(addr))
		if !ok {
			return errors.New("no node on " + addr)
		}
		if st := n.Status(); st.Version != lab.NewestTalosVersion || st.Schematic != schematic || st.Platform != factory.PlatformOpenStack {
			return fmt.Errorf("node runs %s %s on %s", st.Version, st.Schematic, st.Platform)
		}
		return nil
	})
	if c.cfg.Talos.Version == lab.NewestTalosVersion {
		t.Fatal("the machine config's installer has the image's version: the test cannot tell them apart")
	}
}
