package proxmox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
)

// cidataLabel is the volume label NoCloud looks for.
const cidataLabel = "cidata"

// CidataFile is the file name of a machine's NoCloud ISO on
// cidata_storage: taloscluster-cidata-<sha256("<cluster>/<host>")[:12]>.iso.
func CidataFile(cluster, hostname string) string {
	sum := sha256.Sum256([]byte(cluster + "/" + hostname))
	return "taloscluster-cidata-" + hex.EncodeToString(sum[:])[:12] + ".iso"
}

// cidataVolID is the volume id of a machine's NoCloud ISO.
func cidataVolID(cluster *config.Cluster, hostname string) string {
	return cidataStorage(cluster) + ":iso/" + CidataFile(cluster.Name, hostname)
}

// cidataStorage is proxmox.cidata_storage (config.Load fills the default).
func cidataStorage(cluster *config.Cluster) string {
	if s := cluster.Proxmox.CIDataStorage; s != "" {
		return s
	}
	return config.DefaultCIDataStorage
}

// buildCidata renders the NoCloud ISO of one machine: user-data is the
// machine config, meta-data its instance-id and local-hostname; ISO9660
// with Joliet and Rock Ridge names, volume label "cidata".
func buildCidata(hostname string, userData []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "talosc-cidata-")
	if err != nil {
		return nil, fmt.Errorf("cidata ISO for %s: %w", hostname, err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "cidata.iso")
	f, err := os.Create(path) //nolint:gosec // a path inside our own temporary directory
	if err != nil {
		return nil, fmt.Errorf("cidata ISO for %s: %w", hostname, err)
	}
	defer func() { _ = f.Close() }()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, fmt.Errorf("cidata ISO for %s: %w", hostname, err)
	}
	fs, err := iso9660.Create(file.New(f, false), 0, 0, 0, work)
	if err != nil {
		return nil, fmt.Errorf("cidata ISO for %s: %w", hostname, err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{"user-data", userData},
		{"meta-data", fmt.Appendf(nil, "instance-id: %s\nlocal-hostname: %s\n", hostname, hostname)},
	}
	for _, e := range files {
		w, err := fs.OpenFile("/"+e.name, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return nil, fmt.Errorf("cidata ISO for %s: %s: %w", hostname, e.name, err)
		}
		_, err = w.Write(e.data)
		// Joliet sizes are taken at Finalize: close every file first.
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("cidata ISO for %s: %s: %w", hostname, e.name, err)
		}
	}
	if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, Joliet: true, VolumeIdentifier: cidataLabel}); err != nil {
		return nil, fmt.Errorf("cidata ISO for %s: %w", hostname, err)
	}
	return os.ReadFile(path) //nolint:gosec // as above
}

// uploadCidata uploads a machine's NoCloud ISO to cidata_storage on node
// and waits for the copy. An upload overwrites, so one that failed
// transiently is simply sent again; one whose answer was lost is looked
// for first (settle), as an ISO of that name that was not there before
// the upload or was written again since (a new ctime), once the import
// tasks on node have ended.
func (c *Cloud) uploadCidata(ctx context.Context, cluster *config.Cluster, node, hostname string, userData []byte) error {
	iso, err := buildCidata(hostname, userData)
	if err != nil {
		return err
	}
	st, name := cidataStorage(cluster), CidataFile(cluster.Name, hostname)
	what := fmt.Sprintf("upload the cidata ISO of %s to %s on %s", hostname, st, node)
	before, err := c.isoEntry(ctx, node, st, name)
	if err == nil {
		err = c.settle(ctx, what, func(ctx context.Context) error {
			upid, err := c.upload(ctx, node, st, name, bytes.NewReader(iso), int64(len(iso)))
			if err != nil {
				return err
			}
			return c.wait(ctx, "its import", goproxmox.NewTask(upid, c.client))
		}, func(ctx context.Context) (bool, error) {
			// An upload's import task has no id: every one on node counts.
			if err := c.awaitTasks(ctx, node, "imgcopy", ""); err != nil {
				return false, err
			}
			now, err := c.isoEntry(ctx, node, st, name)
			return now != nil && (before == nil || now.Ctime != before.Ctime), err
		})
	}
	if err != nil {
		return fmt.Errorf("%s (proxmox.cidata_storage): %w", what, err)
	}
	return nil
}

// isoEntry is the ISO file name on storage as node lists it; nil when it
// is not there.
func (c *Cloud) isoEntry(ctx context.Context, node, storage, name string) (*goproxmox.StorageContent, error) {
	content, err := c.isoContent(ctx, node, storage)
	if err != nil {
		return nil, fmt.Errorf("list the ISOs of %s on %s: %w", storage, node, err)
	}
	for i, v := range content {
		if v.Volid == storage+":iso/"+name {
			return &content[i], nil
		}
	}
	return nil, nil
}

// deleteCidata removes a machine's NoCloud ISO from cidata_storage on
// node; a missing ISO is not an error.
func (c *Cloud) deleteCidata(ctx context.Context, cluster *config.Cluster, node, hostname string) error {
	volid := cidataVolID(cluster, hostname)
	var upid goproxmox.UPID
	err := c.client.Delete(ctx, fmt.Sprintf("/nodes/%s/storage/%s/content/%s", url.PathEscape(node), url.PathEscape(cidataStorage(cluster)), url.PathEscape(volid)), &upid)
	switch {
	case isMissing(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete the cidata ISO %s on %s: %w", volid, node, err)
	}
	return c.wait(ctx, "delete the cidata ISO "+volid+" on "+node, goproxmox.NewTask(upid, c.client))
}
