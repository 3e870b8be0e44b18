package proxmox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
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
// and waits for the copy.
func (c *Cloud) uploadCidata(ctx context.Context, cluster *config.Cluster, node, hostname string, userData []byte) error {
	iso, err := buildCidata(hostname, userData)
	if err != nil {
		return err
	}
	st := cidataStorage(cluster)
	var upid goproxmox.UPID
	path := fmt.Sprintf("/nodes/%s/storage/%s/upload", url.PathEscape(node), url.PathEscape(st))
	// go-proxmox's upload takes no context; the HTTP client's timeout
	// (Options.RequestTimeout) bounds it. Its streamed body cannot be
	// replayed by the retrying transport, but the ISO is in memory and an
	// upload under the same name overwrites (pve-storage's upload: "we
	// simply overwrite the destination file if it already exists"), so a
	// transient failure is retried here.
	for attempt := 0; ; attempt++ {
		err = c.client.UploadReader(path, map[string]string{"content": "iso"}, CidataFile(cluster.Name, hostname), bytes.NewReader(iso), int64(len(iso)), &upid)
		if err == nil || attempt == retries || !transientUpload(err) {
			break
		}
		c.opts.Logf("proxmox: upload of the cidata ISO of %s: %v; retrying (%d of %d)", hostname, err, attempt+1, retries)
		if serr := ctxwait.Sleep(ctx, time.Duration(250<<attempt)*time.Millisecond); serr != nil {
			return serr
		}
	}
	if err != nil {
		return fmt.Errorf("upload the cidata ISO to %s on %s (proxmox.cidata_storage): %w", st, node, err)
	}
	return c.wait(ctx, "upload the cidata ISO to "+st+" on "+node, goproxmox.NewTask(upid, c.client))
}

// transientUpload reports an upload failure worth another attempt: a
// gateway or availability answer, or a connection that broke.
func transientUpload(err error) bool {
	msg := err.Error()
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(msg, "502 ") || strings.Contains(msg, "503 ") || strings.Contains(msg, "504 ")
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
