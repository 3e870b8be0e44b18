package openstack_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

// adminImages is the lab admin's image client (another project).
func adminImages(t *testing.T, lab *labos.Cloud) *gophercloud.ServiceClient {
	t.Helper()
	pc, err := gos.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: lab.AuthURL(), Username: "admin", Password: labos.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := gos.NewImageV2(pc, gophercloud.EndpointOpts{Region: lab.Region()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// uploadedImage creates an active image through client.
func uploadedImage(t *testing.T, client *gophercloud.ServiceClient, opts images.CreateOpts) string {
	t.Helper()
	opts.DiskFormat, opts.ContainerFormat = "raw", "bare"
	img, err := images.Create(t.Context(), client, opts).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := imagedata.Upload(t.Context(), client, img.ID, strings.NewReader("somebody's disk")).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	return img.ID
}

func TestEnsureImage_NeverBootsFromAnImageItCannotProveItsOwn(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	spec := imageSpec(t, "")
	ours := map[string]string{"talos_version": spec.TalosVersion, "talos_schematic": spec.SchematicID}
	public := images.ImageVisibilityPublic
	foreign := []string{
		// Another project's public image, markers and all.
		uploadedImage(t, adminImages(t, l.lab), images.CreateOpts{Name: spec.Name, Visibility: &public, Tags: []string{openstack.TagManagedBy}, Properties: ours}),
		// This project's, uploaded by hand: no marker.
		uploadedImage(t, l.image, images.CreateOpts{Name: spec.Name, Properties: ours}),
		// This project's, tagged, of another schematic.
		uploadedImage(t, l.image, images.CreateOpts{
			Name: spec.Name, Tags: []string{openstack.TagManagedBy},
			Properties: map[string]string{"talos_version": spec.TalosVersion, "talos_schematic": "0000"},
		}),
	}
	if _, ok, err := l.cloud.FindImage(t.Context(), spec); ok || err != nil {
		t.Fatalf("FindImage = %v, %v; want none of the foreign images", ok, err)
	}
	img, err := l.cloud.EnsureImage(t.Context(), spec, &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(foreign, img.ID) || img.Status != "active" {
		t.Fatalf("EnsureImage = %+v, one of the foreign images %v", img, foreign)
	}
	if n := len(l.lab.Inventory().Images); n != 4 {
		t.Errorf("%d images, want the 3 foreign ones and talosc's own", n)
	}
	for _, id := range foreign {
		if !strings.Contains(l.logs.String(), "not using glance image(s) ") || !strings.Contains(l.logs.String(), id) {
			t.Errorf("the foreign image %s was not named:\n%s", id, l.logs)
		}
	}
	if found, ok, err := l.cloud.FindImage(t.Context(), spec); !ok || err != nil || found.ID != img.ID {
		t.Errorf("FindImage = %+v, %v, %v; want %s", found, ok, err, img.ID)
	}
}

func TestEnsureImage_LostCreateAnswerAdoptsTheImageItMade(t *testing.T) {
	t.Parallel()
	clean := newComputeLab(t, labos.Config{}, threeCPs)
	if _, err := clean.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	lostAnswerRuns(t, clean.lab.Snapshot(), labnet.Fault{Service: labos.Glance, Method: http.MethodPost, PathPrefix: "/v2/images", Nth: 1}, func(t *testing.T, l *computeLab) {
		t.Helper()
		if _, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{}); err != nil {
			t.Fatalf("EnsureImage: %v\n%s", err, l.logs)
		}
	})
}

func TestEnsureImage_FillsTheEmptyImageAKilledRunLeft(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	spec := imageSpec(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l.connect(t, openstack.Options{HTTPClient: &http.Client{Transport: &killAt{method: http.MethodPost, suffix: "/v2/images", dead: true, cancel: cancel}}})
	if _, err := l.cloud.EnsureImage(ctx, spec, &provider.Plan{}); err == nil {
		t.Fatal("the killed run succeeded")
	}
	left := l.lab.Inventory().Images
	if len(left) != 1 || left[0].Status != "queued" {
		t.Fatalf("the killed run left %+v, want one empty image", left)
	}
	l.connect(t, openstack.Options{})
	plan := &provider.Plan{}
	img, err := l.cloud.EnsureImage(t.Context(), spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID != left[0].ID || img.Status != "active" || len(plan.Changes()) != 1 || !strings.Contains(plan.Changes()[0].Detail, "into the empty image "+img.ID) {
		t.Errorf("next run = %+v, changes %+v; want the empty image %s filled", img, plan.Changes(), left[0].ID)
	}
	if n := len(l.lab.Inventory().Images); n != 1 {
		t.Errorf("%d images, want 1", n)
	}
}
