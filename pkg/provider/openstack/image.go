package openstack

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// KindImage is the plan kind of the shared Glance boot image.
const KindImage = "openstack:image"

// Glance attributes of the boot image (reference §5.2).
const (
	imageMinDiskGB  = 20
	imageMinRAMMB   = 2048
	propGuestAgent  = "hw_qemu_guest_agent"
	propTalos       = "talos_version"
	propSchematic   = "talos_schematic"
	guestAgentValue = "yes"
)

// FindImage finds talosc's active boot image of spec (see ownImages).
func (c *Cloud) FindImage(ctx context.Context, spec provider.ImageSpec) (provider.Image, bool, error) {
	active, _, err := c.ownImages(ctx, spec)
	if len(active) == 0 || err != nil {
		return provider.Image{}, false, err
	}
	return imageOf(c.oldest(spec.Name, active)), true, nil
}

// EnsureImage finds the boot image, or creates it from the Image Factory
// artifact (decompressed while it streams into Glance), and makes sure it
// asks for the QEMU guest agent. An empty image a previous run created
// and could not upload into is filled rather than left behind.
func (c *Cloud) EnsureImage(ctx context.Context, spec provider.ImageSpec, plan *provider.Plan) (provider.Image, error) {
	active, queued, err := c.ownImages(ctx, spec)
	if err != nil {
		return provider.Image{}, err
	}
	if len(active) > 0 {
		img := c.oldest(spec.Name, active)
		return imageOf(img), c.ensureGuestAgent(ctx, img, plan)
	}
	created := provider.Image{Name: spec.Name}
	change := state.Change{
		Action: "create", Kind: KindImage, Name: spec.Name,
		Detail: fmt.Sprintf("raw image of Talos %s, schematic %s, from %s", spec.TalosVersion, spec.SchematicID, spec.Artifact),
	}
	var empty *images.Image
	if len(queued) > 0 {
		empty = &queued[0]
		change.Detail += ", into the empty image " + empty.ID + " an earlier run created"
	}
	err = plan.Do(ctx, change, func(ctx context.Context) error {
		var err error
		created, err = c.createImage(ctx, spec, empty, plan)
		return err
	})
	return created, err
}

// ensureGuestAgent sets hw_qemu_guest_agent=yes on an image lacking it.
func (c *Cloud) ensureGuestAgent(ctx context.Context, img *images.Image, plan *provider.Plan) error {
	have, present := img.Properties[propGuestAgent]
	if have == guestAgentValue {
		return nil
	}
	op := images.AddOp
	if present {
		op = images.ReplaceOp
	}
	change := state.Change{Action: "update", Kind: KindImage, Name: img.Name, Detail: propGuestAgent + "=" + guestAgentValue}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		patch := images.UpdateOpts{images.UpdateImageProperty{Op: op, Name: propGuestAgent, Value: guestAgentValue}}
		_, err := images.Update(ctx, c.image, img.ID, patch).Extract()
		return wrap(err, "glance image %s", img.ID)
	})
}

// uploadAttempts is how often the image is made (download and upload)
// before giving up: a streamed upload cannot be replayed by the transport,
// so a transient failure restarts the whole stream.
const uploadAttempts = 3

// createImage creates the image (or takes empty, an image an earlier run
// created) and uploads the artifact into it, starting over (a new record,
// a new download) when an attempt fails.
func (c *Cloud) createImage(ctx context.Context, spec provider.ImageSpec, empty *images.Image, plan *provider.Plan) (provider.Image, error) {
	if spec.Fetch == nil {
		return provider.Image{}, fmt.Errorf("no way to download the image factory artifact %s", spec.Artifact)
	}
	for attempt := 1; ; attempt++ {
		img, err := c.createImageOnce(ctx, spec, empty, plan)
		if err == nil || attempt == uploadAttempts || ctx.Err() != nil {
			return img, err
		}
		empty = nil // deleted by the failed attempt
		c.opts.Logf("openstack: boot image %s: %v; starting over (%d of %d)", spec.Name, err, attempt+1, uploadAttempts)
	}
}

// createImageOnce creates the image record (unless img is one already)
// and uploads the artifact into it; an image whose upload failed is
// deleted.
func (c *Cloud) createImageOnce(ctx context.Context, spec provider.ImageSpec, img *images.Image, plan *provider.Plan) (provider.Image, error) {
	var err error
	if img == nil {
		if img, err = c.postImage(ctx, spec, plan); err != nil {
			return provider.Image{}, err
		}
	}
	if err = c.upload(ctx, img.ID, spec); err != nil {
		// The caller's context may be what ended the upload; the
		// half-made image is removed regardless.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.RequestTimeout)
		defer cancel()
		if derr := images.Delete(cleanup, c.image, img.ID).ExtractErr(); derr != nil && !isNotFound(derr) {
			err = errors.Join(err, wrap(derr, "delete the incomplete glance image %s (delete it by hand)", img.ID))
		}
		return provider.Image{}, err
	}
	id := img.ID
	if img, err = images.Get(ctx, c.image, id).Extract(); err != nil {
		return provider.Image{}, wrap(err, "glance image %s after upload", id)
	}
	if img.Status != images.ImageStatusActive {
		return provider.Image{}, fmt.Errorf("glance image %s is %s after its upload, not active", id, img.Status)
	}
	return imageOf(img), nil
}

// upload streams spec's artifact through an xz decompressor into the
// image's data (PUT /file); nothing is buffered beyond the pipes. A failed
// or truncated download fails the upload.
func (c *Cloud) upload(ctx context.Context, id string, spec provider.ImageSpec) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	fetched := make(chan error, 1)
	go func() {
		_, err := spec.Fetch(ctx, pw)
		if err != nil {
			err = fmt.Errorf("download %s: %w", spec.Artifact, err)
		}
		pw.CloseWithError(err) // nil: the decompressor sees the end
		fetched <- err
	}()
	// finish stops the download (if the upload ended first) and returns
	// its outcome, which explains an upload failure best.
	finish := func(upErr error) error {
		pr.CloseWithError(errors.New("upload ended"))
		if err := <-fetched; err != nil {
			return err
		}
		return upErr
	}
	raw, err := xz.NewReader(pr)
	if err != nil {
		return finish(fmt.Errorf("decompress %s: %w", spec.Artifact, err))
	}
	err = imagedata.Upload(ctx, c.image, id, &readErrs{r: raw, what: "decompress " + spec.Artifact}).ExtractErr()
	return finish(wrap(err, "upload to glance image %s", id))
}

// readErrs names what failed when reading r did (the HTTP client reports a
// body read error without saying it came from the body).
type readErrs struct {
	r    io.Reader
	what string
}

func (r *readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%s: %w", r.what, err)
	}
	return n, err
}

func imageOf(img *images.Image) provider.Image {
	return provider.Image{ID: img.ID, Name: img.Name, Status: string(img.Status)}
}
