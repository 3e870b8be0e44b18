package openstack

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Swift's ETag is the MD5 of the object
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/objects"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/talosc/talosc/pkg/backup"
)

// The ownership metadata of a Swift container talosc created for
// backup.swift (X-Container-Meta-Managed-By and -Cluster): the tags'
// markers as Swift metadata. A container without them was made by
// someone else; talosc stores into it but never marks nor deletes it.
const (
	SwiftMetaManagedBy = "Managed-By"
	SwiftMetaCluster   = "Cluster"
	swiftManagedBy     = "taloscluster"
)

// maxRecordSize bounds a record read from Swift (records are a few KiB).
const maxRecordSize = 1 << 20

// cleanupTimeout bounds the removal of a half-stored bundle after its
// Put failed, also when the Put's context is done.
const cleanupTimeout = 30 * time.Second

// BackupContainer is backup.swift's target (backup.ObjectStore): the
// bundles and their records as objects of container in the project's
// object store, the catalog's object-store endpoint of the region,
// reached with the cluster's own credential.
func (c *Cloud) BackupContainer(_ context.Context, container string) (backup.Target, error) {
	sc, err := gos.NewObjectStorageV1(c.session, gophercloud.EndpointOpts{Region: c.region})
	if err != nil {
		return nil, fmt.Errorf("openstack: no object-store (swift) service in region %q of the catalog at %s, so backup.swift cannot keep the bundles (remove it to keep them in backup.dir): %w", c.region, c.url, err)
	}
	return NewSwiftTarget(sc, container, c.cluster.Name), nil
}

// swiftTarget keeps bundles and their records side by side as objects
// of one container.
type swiftTarget struct {
	client    *gophercloud.ServiceClient
	container string
	cluster   string
}

// NewSwiftTarget is a backup.Target over a Swift object-store client:
// bundle NAME is object NAME, its record NAME.json, written last with
// If-None-Match: * (nothing is ever replaced). The container is created
// on the first Put when missing, with cluster's ownership metadata.
// Uploads stream; each is checked by the ETag (MD5) and size Swift
// reports against what was sent.
//
// Every request asks for its connection to be closed after the answer:
// Swift's eventlet proxy (Debian's 2.30) ends some answers, a HEAD's among
// them, with a stray chunk terminator "0\r\n\r\n", which the next answer
// read on that connection then starts with ("malformed HTTP response
// \"0\""). The request that read it was processed, so a retry is no cure
// (a conditional create would then find its own object); a connection per
// request is. A backup makes a handful of requests.
func NewSwiftTarget(client *gophercloud.ServiceClient, container, cluster string) backup.Target {
	sc := *client // the ServiceClient is a value over the shared provider client
	sc.MoreHeaders = maps.Clone(client.MoreHeaders)
	if sc.MoreHeaders == nil {
		sc.MoreHeaders = map[string]string{}
	}
	sc.MoreHeaders["Connection"] = "close"
	return swiftTarget{client: &sc, container: container, cluster: cluster}
}

func (s swiftTarget) String() string { return "swift container " + s.container }

func (s swiftTarget) Put(ctx context.Context, rec backup.Record, bundle io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := backup.CheckRecord(rec); err != nil {
		return err
	}
	if err := s.ensureContainer(ctx); err != nil {
		return err
	}
	if err := s.putBundle(ctx, &rec, bundle); err != nil {
		return err
	}
	rec.Problem = ""
	data, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		// a bytes.Reader: gophercloud sends its MD5 as the ETag, and Swift
		// refuses a record that did not arrive whole (422)
		err = s.create(ctx, rec.Name+backup.RecordExt, objects.CreateOpts{Content: bytes.NewReader(append(data, '\n')), ContentType: "application/json"})
	}
	if err != nil {
		s.remove(ctx, rec.Name)
		return fmt.Errorf("store backup record: %w", err)
	}
	return nil
}

// ensureContainer creates the container, with the cluster's ownership
// metadata, when it is missing.
func (s swiftTarget) ensureContainer(ctx context.Context) error {
	err := containers.Get(ctx, s.client, s.container, nil).Err
	if !isNotFound(err) {
		return wrap(err, "the backup container %s", s.container)
	}
	err = containers.Create(ctx, s.client, s.container, containers.CreateOpts{
		Metadata: map[string]string{SwiftMetaManagedBy: swiftManagedBy, SwiftMetaCluster: s.cluster},
	}).Err
	return wrap(err, "create the backup container %s", s.container)
}

// putBundle streams the bundle into its object, never over an existing
// one, and checks what Swift stored against what was sent: the ETag and
// size, then rec's size and sha256 (filled when unset). A bundle that
// does not match is removed.
func (s swiftTarget) putBundle(ctx context.Context, rec *backup.Record, bundle io.Reader) error {
	dg, sum := backup.NewDigest(), md5.New() //nolint:gosec // Swift's ETag
	body := backup.CtxReader(ctx, io.TeeReader(bundle, io.MultiWriter(dg, sum)))
	opts := objects.CreateOpts{Content: body, NoETag: true, ContentType: "application/octet-stream"}
	header, err := s.createHeader(ctx, rec.Name, opts)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return errors.Join(cerr, err)
		}
		return fmt.Errorf("store backup: %w", err)
	}
	sent := hex.EncodeToString(sum.Sum(nil))
	err = s.checkStored(ctx, rec.Name, header.Get("ETag"), sent, dg.Size())
	if err == nil {
		err = dg.Complete(rec)
	}
	if err != nil {
		s.remove(ctx, rec.Name)
		return fmt.Errorf("store backup %s in %s: %w", rec.Name, s, err)
	}
	return nil
}

// checkStored compares the object's ETag (as the PUT answered it, and as
// it reads back) and size with what was sent.
func (s swiftTarget) checkStored(ctx context.Context, name, putETag, sent string, size int64) error {
	if got := strings.Trim(putETag, `"`); !strings.EqualFold(got, sent) {
		return fmt.Errorf("swift stored it with ETag %s, but %d bytes with MD5 %s were sent", got, size, sent)
	}
	h, err := objects.Get(ctx, s.client, s.container, name, nil).Extract()
	if err != nil {
		return fmt.Errorf("read back what was stored: %w", err)
	}
	if got := strings.Trim(h.ETag, `"`); h.ContentLength != size || !strings.EqualFold(got, sent) {
		return fmt.Errorf("swift holds %d bytes with ETag %s, but %d bytes with MD5 %s were sent", h.ContentLength, got, size, sent)
	}
	return nil
}

// create stores object name with opts, never over an existing object
// (If-None-Match: *; an existing one is fs.ErrExist).
func (s swiftTarget) create(ctx context.Context, name string, opts objects.CreateOpts) error {
	_, err := s.createHeader(ctx, name, opts)
	return err
}

func (s swiftTarget) createHeader(ctx context.Context, name string, opts objects.CreateOpts) (http.Header, error) {
	opts.IfNoneMatch = "*"
	res := objects.Create(ctx, s.client, s.container, name, opts)
	if gophercloud.ResponseCodeIs(res.Err, http.StatusPreconditionFailed) {
		return nil, fmt.Errorf("%s already holds %s: %w", s, name, fs.ErrExist)
	}
	if res.Err != nil {
		return nil, fmt.Errorf("upload %s to %s: %w", name, s, res.Err)
	}
	return res.Header, nil
}

// remove deletes a half-stored object, also once ctx is done (best
// effort: List ignores a bundle without its record).
func (s swiftTarget) remove(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = objects.Delete(ctx, s.client, s.container, name, nil).Err
}

func (s swiftTarget) List(ctx context.Context, cluster string) ([]backup.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	err := objects.List(s.client, s.container, objects.ListOpts{Prefix: cluster + "-"}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		infos, err := objects.ExtractInfo(p)
		for _, o := range infos {
			sizes[o.Name] = o.Bytes
		}
		return true, err
	})
	if isNotFound(err) {
		return nil, nil // no container yet: no backup yet
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s, err)
	}
	var recs []backup.Record
	for name := range sizes {
		bundle, ok := strings.CutSuffix(name, backup.RecordExt)
		if c, named := backup.ClusterOf(bundle); !ok || !named || c != cluster {
			continue
		}
		rec, err := s.readRecord(ctx, bundle, cluster, sizes)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, backup.NewestFirst)
	return recs, nil
}

// readRecord reads name's record and marks it when its bundle is missing
// from the listing or has another size there.
func (s swiftTarget) readRecord(ctx context.Context, name, cluster string, sizes map[string]int64) (backup.Record, error) {
	object := name + backup.RecordExt
	var rec backup.Record
	res := objects.Download(ctx, s.client, s.container, object, nil)
	err := res.Err
	if err == nil {
		var data []byte
		data, err = io.ReadAll(io.LimitReader(res.Body, maxRecordSize))
		err = errors.Join(err, res.Body.Close())
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
	}
	if err != nil {
		return backup.Record{}, fmt.Errorf("backup record %s in %s: %w (delete it if its bundle is gone)", object, s, err)
	}
	if rec.Name != name || rec.Meta.Cluster != cluster {
		return backup.Record{}, fmt.Errorf("backup record %s in %s names bundle %q of cluster %q: it was renamed; give it back its name", object, s, rec.Name, rec.Meta.Cluster)
	}
	rec.Problem = ""
	switch size, ok := sizes[name]; {
	case !ok:
		rec.Problem = fmt.Sprintf("bundle %s is missing from %s", name, s)
	case size != rec.BundleSize:
		rec.Problem = fmt.Sprintf("bundle %s is %d bytes, its record says %d", name, size, rec.BundleSize)
	}
	return rec, nil
}

func (s swiftTarget) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := backup.CheckName(name); err != nil {
		return nil, err
	}
	res := objects.Download(ctx, s.client, s.container, name, nil)
	if isNotFound(res.Err) {
		return nil, fmt.Errorf("backup %s in %s: %w", name, s, fs.ErrNotExist)
	}
	if res.Err != nil {
		return nil, fmt.Errorf("backup %s in %s: %w", name, s, res.Err)
	}
	return res.Body, nil
}

func (s swiftTarget) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := backup.CheckName(name); err != nil {
		return err
	}
	recErr := objects.Delete(ctx, s.client, s.container, name+backup.RecordExt, nil).Err
	if recErr != nil && !isNotFound(recErr) {
		return fmt.Errorf("delete backup record %s%s in %s: %w", name, backup.RecordExt, s, recErr)
	}
	err := objects.Delete(ctx, s.client, s.container, name, nil).Err
	switch {
	case err == nil:
		return nil
	case isNotFound(err) && recErr == nil:
		return nil // a record whose bundle was already gone
	case isNotFound(err):
		return fmt.Errorf("delete backup %s in %s: %w", name, s, fs.ErrNotExist)
	}
	return fmt.Errorf("delete backup %s in %s: %w", name, s, err)
}

var _ backup.ObjectStore = (*Cloud)(nil)
