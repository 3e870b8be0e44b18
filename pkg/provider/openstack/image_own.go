package openstack

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// The boot image is adopted only when it is provably talosc's image of the
// schematic (I-F7): owned by the credential's project, tagged
// managed-by (either marker), and carrying spec's talos_version and
// talos_schematic properties, which talosc sets in the create itself. A
// same-named image without them (a public or shared image of another
// project, one uploaded by hand) is never booted from: talosc makes its
// own, private one beside it and says so. Glance names are not unique, so
// refusing would block a project for an image it cannot delete.

// ownImages lists the images named spec.Name that are talosc's image of
// spec: the active ones and the queued ones (created by a run that ended
// before its upload, or whose answer was lost), each oldest first.
func (c *Cloud) ownImages(ctx context.Context, spec provider.ImageSpec) (active, queued []images.Image, err error) {
	pages, err := images.List(c.image, images.ListOpts{Name: spec.Name}).AllPages(ctx)
	if err != nil {
		return nil, nil, wrap(err, "list glance images named %q", spec.Name)
	}
	found, err := images.ExtractImages(pages)
	if err != nil {
		return nil, nil, wrap(err, "list glance images named %q", spec.Name)
	}
	slices.SortFunc(found, func(a, b images.Image) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	var foreign []string
	for _, img := range found {
		switch {
		case img.Name != spec.Name:
		case !ownImage(img, spec, c.projectID):
			foreign = append(foreign, img.ID)
		case img.Status == images.ImageStatusActive:
			active = append(active, img)
		case img.Status == images.ImageStatusQueued:
			queued = append(queued, img)
		}
	}
	if len(foreign) > 0 {
		c.opts.Logf("openstack: not using glance image(s) %s named %q: only an image of this project tagged %s with talos_version %s and talos_schematic %s is talosc's boot image",
			strings.Join(foreign, ", "), spec.Name, TagManagedBy, spec.TalosVersion, spec.SchematicID)
	}
	return active, queued, nil
}

// ownImage reports whether img is talosc's image of spec in project.
func ownImage(img images.Image, spec provider.ImageSpec, project string) bool {
	managed := slices.Contains(img.Tags, TagManagedBy) || slices.Contains(img.Tags, TagLegacyManagedBy)
	return img.Owner == project && managed && img.Properties[propTalos] == spec.TalosVersion && img.Properties[propSchematic] == spec.SchematicID
}

// oldest returns the first of the active images, warning when there are
// several.
func (c *Cloud) oldest(name string, active []images.Image) *images.Image {
	if len(active) > 1 {
		ids := make([]string, len(active))
		for i, img := range active {
			ids[i] = img.ID
		}
		c.opts.Logf("openstack: %d active glance images are named %q (%s); using the oldest, %s", len(active), name, strings.Join(ids, ", "), active[0].ID)
	}
	return &active[0]
}

// postImage creates the image record: private, tagged, with the talos_*
// properties that prove it talosc's from the start. A lost answer is
// settled (see settle) on the queued images of spec; of several, the
// first is kept and the others, empty, are deleted through plan.
func (c *Cloud) postImage(ctx context.Context, spec provider.ImageSpec, plan *provider.Plan) (*images.Image, error) {
	private := images.ImageVisibilityPrivate
	opts := images.CreateOpts{
		Name: spec.Name, Visibility: &private, Tags: []string{TagManagedBy},
		DiskFormat: "raw", ContainerFormat: "bare", MinDisk: imageMinDiskGB, MinRAM: imageMinRAMMB,
		Properties: map[string]string{propGuestAgent: guestAgentValue, propTalos: spec.TalosVersion, propSchematic: spec.SchematicID},
	}
	img, err := settle(ctx, c, lateCreate[images.Image]{
		what: "image " + spec.Name,
		create: func(ctx context.Context) (images.Image, error) {
			img, err := images.Create(ctx, c.image, opts).Extract()
			if err != nil {
				return images.Image{}, wrap(err, "glance")
			}
			return *img, nil
		},
		find: func(ctx context.Context) ([]images.Image, error) {
			_, queued, err := c.ownImages(ctx, spec)
			return queued, err
		},
		id:   func(img images.Image) string { return img.ID },
		uses: func(_ context.Context, found []images.Image) ([]bool, error) { return make([]bool, len(found)), nil },
		drop: func(ctx context.Context, img images.Image) error { return c.dropImage(ctx, plan, img) },
	})
	if err != nil {
		return nil, err
	}
	return &img, nil
}

// dropImage deletes an empty duplicate of the boot image through plan.
func (c *Cloud) dropImage(ctx context.Context, plan *provider.Plan, img images.Image) error {
	change := state.Change{Action: state.ActionDelete, Kind: KindImage, Name: img.Name, Detail: "empty image " + img.ID + ", a duplicate made by a create applied late"}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		if err := images.Delete(ctx, c.image, img.ID).ExtractErr(); err != nil && !isNotFound(err) {
			return wrap(err, "glance")
		}
		return nil
	})
}
