package e2e

import (
	"context"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/openstack"
	osprovider "github.com/talosc/talosc/pkg/provider/openstack"
)

// glance runs "lab glance impostors" and "lab glance boots-own":
//
//	impostors  replaces every image talosc made with two of the same name
//	           and properties that are not provably its own, made through
//	           Glance's API by the cloud's admin: another project's public
//	           image carrying the ownership tag, and an untagged image of
//	           the cluster's project (as if uploaded by hand); talosc's own
//	           image is deleted, so the next server needs a boot image
//	boots-own SERVER...
//	           each server boots (directly or from its boot volume) from
//	           an image talosc made: tagged, of the server's own project
func (s *scriptLab) glance(ts *testscript.TestScript, args []string) {
	cloud := s.simulated(ts)
	switch {
	case len(args) == 1 && args[0] == "impostors":
		s.glanceImpostors(ts, cloud)
	case len(args) > 1 && args[0] == "boots-own":
		bootsOwnImage(ts, cloud.Inventory(), args[1:])
	default:
		ts.Fatalf("usage: lab glance impostors|boots-own SERVER...")
	}
}

func (s *scriptLab) glanceImpostors(ts *testscript.TestScript, cloud *openstack.Cloud) {
	ctx := context.Background()
	pc, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: cloud.AuthURL(), Username: "admin", Password: openstack.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"},
	})
	ts.Check(err)
	admin, err := gos.NewImageV2(pc, gophercloud.EndpointOpts{Region: cloud.Region()})
	ts.Check(err)
	public := images.ImageVisibilityPublic
	made := 0
	for _, img := range cloud.Inventory().Images {
		if !slices.Contains(img.Tags, osprovider.TagManagedBy) {
			continue
		}
		for _, opts := range []images.CreateOpts{
			{Name: img.Name, Visibility: &public, Tags: img.Tags, Properties: img.Properties},
			{Name: img.Name, Properties: img.Properties}, // then given to the cluster's project
		} {
			opts.DiskFormat, opts.ContainerFormat = img.DiskFormat, img.ContainerFormat
			created, err := images.Create(ctx, admin, opts).Extract()
			ts.Check(err)
			if opts.Visibility == nil {
				_, err = images.Update(ctx, admin, created.ID, images.UpdateOpts{
					images.UpdateImageProperty{Op: images.ReplaceOp, Name: "owner", Value: img.Owner},
				}).Extract()
				ts.Check(err)
			}
			ts.Check(imagedata.Upload(ctx, admin, created.ID, strings.NewReader("somebody else's disk")).ExtractErr())
			made++
		}
		ts.Check(images.Delete(ctx, admin, img.ID).ExtractErr())
	}
	if made == 0 {
		ts.Fatalf("lab glance impostors: talosc has made no image yet")
	}
	ts.Logf("replaced %d image(s) of talosc's by %d impostors", made/2, made)
}

// bootsOwnImage fails unless each of the servers named exists and boots
// from an image tagged as talosc's that belongs to the server's project.
func bootsOwnImage(ts *testscript.TestScript, inv openstack.Inventory, names []string) {
	byID := map[string]openstack.Image{}
	for _, img := range inv.Images {
		byID[img.ID] = img
	}
	volumeImage := map[string]string{}
	for _, v := range inv.Volumes {
		if v.ImageID != "" {
			volumeImage[v.ServerID] = v.ImageID
		}
	}
	for _, srv := range inv.Servers {
		if !slices.Contains(names, srv.Name) {
			continue
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == srv.Name })
		id := srv.ImageID
		if id == "" {
			id = volumeImage[srv.ID]
		}
		img, ok := byID[id]
		switch {
		case !ok:
			ts.Fatalf("server %s boots from image %q, which no longer exists", srv.Name, id)
		case !slices.Contains(img.Tags, osprovider.TagManagedBy) || img.Owner != srv.ProjectID:
			ts.Fatalf("server %s boots from image %s (%s), which talosc cannot prove its own: tags %v, owner %s, server's project %s",
				srv.Name, img.ID, img.Name, img.Tags, img.Owner, srv.ProjectID)
		}
	}
	if len(names) > 0 {
		ts.Fatalf("lab glance boots-own: no server %v", names)
	}
}
