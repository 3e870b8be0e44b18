package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/talosc/talosc/pkg/provider"
)

// The boot image is adopted only when it is provably talosc's image of the
// schematic (audit S5): owned by the credential's project, tagged
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
// properties that prove it talosc's from the start. When the answer is
// lost it adopts the queued image the create made, or creates again.
func (c *Cloud) postImage(ctx context.Context, spec provider.ImageSpec) (*images.Image, error) {
	private := images.ImageVisibilityPrivate
	opts := images.CreateOpts{
		Name: spec.Name, Visibility: &private, Tags: []string{TagManagedBy},
		DiskFormat: "raw", ContainerFormat: "bare", MinDisk: imageMinDiskGB, MinRAM: imageMinRAMMB,
		Properties: map[string]string{propGuestAgent: guestAgentValue, propTalos: spec.TalosVersion, propSchematic: spec.SchematicID},
	}
	for attempt := 1; ; attempt++ {
		img, err := images.Create(ctx, c.image, opts).Extract()
		if err == nil || !maybeApplied(err) || ctx.Err() != nil {
			return img, wrap(err, "glance")
		}
		_, queued, lerr := c.ownImages(ctx, spec)
		if lerr != nil {
			return nil, errors.Join(wrap(err, "glance"), wrap(lerr, "find out whether image %s was created after all", spec.Name))
		}
		switch {
		case len(queued) == 1:
			c.opts.Logf("openstack: create image %s: %v; it was made all the same (%s): adopting it", spec.Name, err, queued[0].ID)
			return &queued[0], nil
		case len(queued) > 1:
			return nil, fmt.Errorf("glance: %w; %d empty images named %s exist now: delete all but one", err, len(queued), spec.Name)
		case attempt == createAttempts:
			return nil, wrap(err, "glance")
		}
		c.opts.Logf("openstack: create image %s: %v; it was not made: creating it again (%d of %d)", spec.Name, err, attempt+1, createAttempts)
	}
}
