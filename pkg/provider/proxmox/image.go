package proxmox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// KindISO is the plan kind of the shared boot ISO on one node.
const KindISO = "proxmox:iso"

// FindImage finds the boot ISO on iso_storage; ok is true only when every
// compute node sees it (the first node only, when the storage is shared).
// It needs the environment of an earlier Preflight.
func (c *Cloud) FindImage(ctx context.Context, spec provider.ImageSpec) (provider.Image, bool, error) {
	env, err := c.environment(ctx)
	if err != nil {
		return provider.Image{}, false, err
	}
	name := factory.ProxmoxISOName(spec.Name)
	missing, err := c.isoMissing(ctx, env, name)
	if err != nil || len(missing) > 0 {
		return provider.Image{}, false, err
	}
	return isoImage(env, spec, name), true, nil
}

// EnsureImage puts the boot ISO on iso_storage of every compute node that
// lacks it (the first node only, when the storage is shared): the node
// downloads it from the Image Factory itself (download-url) when the token
// holds Sys.AccessNetwork there, else talosc fetches it once and uploads
// it. An ISO already present is reused. In a dry run a missing ISO is
// returned with an empty ID.
func (c *Cloud) EnsureImage(ctx context.Context, spec provider.ImageSpec, plan *provider.Plan) (provider.Image, error) {
	env, err := c.environment(ctx)
	if err != nil {
		return provider.Image{}, err
	}
	name := factory.ProxmoxISOName(spec.Name)
	missing, err := c.isoMissing(ctx, env, name)
	if err != nil {
		return provider.Image{}, err
	}
	up := &isoUpload{spec: spec}
	defer up.close()
	volid := isoVolID(env, name)
	img := isoImage(env, spec, name)
	if len(missing) > 0 {
		img = provider.Image{Name: spec.Name} // no volume until the ISO is put there: a dry run puts none
	}
	for _, n := range missing {
		how := "downloaded by the node from " + spec.URL
		if !n.Download || spec.URL == "" {
			how = "uploaded (the token lacks Sys.AccessNetwork on /nodes/" + n.Name + ")"
		}
		change := state.Change{
			Action: "create", Kind: KindISO, Name: n.Name + "/" + volid,
			Detail: fmt.Sprintf("boot ISO of Talos %s, schematic %s, %s", spec.TalosVersion, spec.SchematicID, how),
		}
		err := plan.Do(ctx, change, func(ctx context.Context) error {
			img = isoImage(env, spec, name) // returned only if the ISO is put there
			if n.Download && spec.URL != "" {
				return c.downloadISO(ctx, n.Name, env.ISOStorage.ID, name, spec.URL)
			}
			return c.uploadISO(ctx, n.Name, env.ISOStorage.ID, name, up)
		})
		if err != nil {
			return provider.Image{}, err
		}
	}
	return img, nil
}

// isoTargets are the nodes that must hold the ISO: every compute node, or
// the first one when iso_storage is shared.
func isoTargets(env *Environment) []Node {
	if env.ISOStorage.Shared {
		return env.Nodes[:1]
	}
	return env.Nodes
}

// isoMissing returns the target nodes whose iso_storage lacks name.
func (c *Cloud) isoMissing(ctx context.Context, env *Environment, name string) ([]Node, error) {
	volid := isoVolID(env, name)
	var missing []Node
	for _, n := range isoTargets(env) {
		isos, err := c.storageISOs(ctx, n.Name, env.ISOStorage.ID)
		if err != nil {
			return nil, fmt.Errorf("proxmox: list the ISOs of storage %s (proxmox.iso_storage) on node %s: %w", env.ISOStorage.ID, n.Name, err)
		}
		if !slices.Contains(isos, volid) {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// storageISOs lists the volume ids of the ISOs on storage as node sees it.
func (c *Cloud) storageISOs(ctx context.Context, node, storage string) ([]string, error) {
	content, err := c.isoContent(ctx, node, storage)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(content))
	for i, v := range content {
		out[i] = v.Volid
	}
	return out, nil
}

// isoContent lists the ISOs on storage as node sees it.
func (c *Cloud) isoContent(ctx context.Context, node, storage string) ([]goproxmox.StorageContent, error) {
	var content []goproxmox.StorageContent
	if err := c.client.Get(ctx, fmt.Sprintf("/nodes/%s/storage/%s/content?content=iso", url.PathEscape(node), url.PathEscape(storage)), &content); err != nil {
		return nil, err
	}
	return content, nil
}

// downloadISO has node fetch the ISO from the Image Factory. A request
// whose answer was lost is judged by the storage once the download task
// it may have started (its id is the file name) has ended.
func (c *Cloud) downloadISO(ctx context.Context, node, storage, name, src string) error {
	what := "download the boot ISO on node " + node
	return c.settle(ctx, what, func(ctx context.Context) error {
		task, err := c.client.NodeRef(node).StorageRef(storage).DownloadURL(ctx, "iso", name, src)
		if err != nil {
			return fmt.Errorf("download-url on node %s: %w", node, err)
		}
		return c.finished(ctx, what, task)
	}, func(ctx context.Context) (bool, error) {
		if err := c.awaitTasks(ctx, node, "download", name); err != nil {
			return false, err
		}
		isos, err := c.storageISOs(ctx, node, storage)
		return slices.Contains(isos, storage+":iso/"+name), err
	})
}

// uploadISO uploads the ISO (fetched once per EnsureImage) to node.
func (c *Cloud) uploadISO(ctx context.Context, node, storage, name string, up *isoUpload) error {
	f, size, err := up.file(ctx)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind the boot ISO: %w", err)
	}
	upid, err := c.upload(ctx, node, storage, name, f, size)
	if err != nil {
		return fmt.Errorf("upload to node %s: %w", node, err)
	}
	return c.finished(ctx, fmt.Sprintf("upload the boot ISO to node %s", node), goproxmox.NewTask(upid, c.client))
}

// finished waits for task and logs the warnings of one that ended with
// "WARNINGS: N" (a success).
func (c *Cloud) finished(ctx context.Context, what string, task *goproxmox.Task) error {
	if task == nil {
		return fmt.Errorf("%s: Proxmox answered no task id", what)
	}
	if err := c.wait(ctx, what, task); err != nil {
		return err
	}
	if task.Warnings > 0 {
		c.opts.Logf("proxmox: %s ended with %d warning(s) (task %s)", what, task.Warnings, task.UPID)
	}
	return nil
}

// isoUpload is the Image Factory artifact in a temporary file, fetched on
// first use so a run that downloads on every node never fetches it.
type isoUpload struct {
	spec provider.ImageSpec
	f    *os.File
	size int64
}

func (u *isoUpload) file(ctx context.Context) (*os.File, int64, error) {
	if u.f != nil {
		return u.f, u.size, nil
	}
	if u.spec.Fetch == nil {
		return nil, 0, fmt.Errorf("no way to download the image factory artifact %s", u.spec.Artifact)
	}
	f, err := os.CreateTemp("", "talosc-boot-*.iso")
	if err != nil {
		return nil, 0, fmt.Errorf("buffer the boot ISO: %w", err)
	}
	n, err := u.spec.Fetch(ctx, f)
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("download %s: %w", u.spec.Artifact, err), closeRemove(f))
	}
	u.f, u.size = f, n
	return f, n, nil
}

func (u *isoUpload) close() {
	if u.f != nil {
		_ = closeRemove(u.f)
	}
}

func closeRemove(f *os.File) error {
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

func isoVolID(env *Environment, name string) string { return env.ISOStorage.ID + ":iso/" + name }

func isoImage(env *Environment, spec provider.ImageSpec, name string) provider.Image {
	return provider.Image{ID: isoVolID(env, name), Name: spec.Name, Status: "available"}
}
