package openstack_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/objects"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider/openstack"
)

var swiftTime = time.Date(2026, 12, 6, 6, 15, 0, 0, time.UTC)

// swiftEnv is cluster "c"'s Swift target and an object-store client of
// the same account for what a test does behind the target's back.
type swiftEnv struct {
	target backup.Target
	demo   *gophercloud.ServiceClient
	// container is the target's container.
	container string
	// open is the target of another container of the account.
	open func(t *testing.T, container string) backup.Target
}

// swiftLab is a lab OpenStack and the swiftEnv of its demo project, the
// target reached through the provider's own session.
type swiftLab struct {
	*computeLab
	swiftEnv
}

const swiftContainer = "c-backups"

func newSwiftLab(t *testing.T) *swiftLab {
	t.Helper()
	l := &swiftLab{computeLab: newComputeLab(t, labos.Config{}, threeCPs)}
	l.open = func(t *testing.T, container string) backup.Target {
		t.Helper()
		target, err := l.cloud.BackupContainer(t.Context(), container)
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	l.container, l.target = swiftContainer, l.open(t, swiftContainer)
	l.demo = objectClient(t, l.lab, "demo")
	return l
}

// objectClient is user's object-store client in the project of the same
// name (the lab's demo and admin users).
func objectClient(t *testing.T, lab *labos.Cloud, user string) *gophercloud.ServiceClient {
	t.Helper()
	pc, err := gos.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: lab.AuthURL(), Username: user, Password: labos.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: user, DomainName: "Default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := gos.NewObjectStorageV1(pc, gophercloud.EndpointOpts{Region: lab.Region()})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func swiftRecord(cluster string, tm time.Time) backup.Record {
	return backup.Record{Name: backup.Name(cluster, tm), Meta: backup.Meta{Format: backup.Format, Cluster: cluster, Time: tm}}
}

func swiftPut(t *testing.T, target backup.Target, rec backup.Record, content string) {
	t.Helper()
	if err := target.Put(t.Context(), rec, strings.NewReader(content)); err != nil {
		t.Fatalf("Put %s: %v", rec.Name, err)
	}
}

// putObject stores an object behind the target's back.
func (l *swiftEnv) putObject(t *testing.T, name, content string) {
	t.Helper()
	if err := objects.Create(t.Context(), l.demo, l.container, name, objects.CreateOpts{Content: strings.NewReader(content)}).Err; err != nil {
		t.Fatal(err)
	}
}

func recordNames(recs []backup.Record) []string {
	var ns []string
	for _, r := range recs {
		ns = append(ns, r.Name)
	}
	return ns
}

// TestSwiftTargetPutListGetDelete: the Dir target's semantics on Swift:
// this cluster's records newest first, another cluster's and a bundle
// without its record left out, Verify re-reading the object, Delete of
// the record and then the bundle.
func TestSwiftTargetPutListGetDelete(t *testing.T) {
	t.Parallel()
	swiftPutListGetDelete(t, &newSwiftLab(t).swiftEnv)
}

func swiftPutListGetDelete(t *testing.T, l *swiftEnv) {
	t.Helper()
	target := l.target
	if target.String() != "swift container "+l.container {
		t.Errorf("String = %q", target.String())
	}
	if recs, err := target.List(t.Context(), "c"); err != nil || len(recs) != 0 {
		t.Fatalf("List before the container exists = %v, %v; want none", recs, err)
	}
	older, newer := swiftRecord("c", swiftTime.Add(-time.Hour)), swiftRecord("c", swiftTime)
	swiftPut(t, target, older, "older bundle")
	swiftPut(t, target, newer, strings.Repeat("newer bundle ", 10000))
	swiftPut(t, target, swiftRecord("c-eu", swiftTime), "another cluster's bundle")
	l.putObject(t, backup.Name("c", swiftTime.Add(time.Hour)), "unfinished")

	recs, err := target.List(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Name != newer.Name || recs[1].Name != older.Name {
		t.Fatalf("List = %v, want the two records of c, newest first", recordNames(recs))
	}
	if r := recs[0]; r.BundleSize != int64(len("newer bundle "))*10000 || len(r.BundleSHA256) != 64 || r.Problem != "" {
		t.Errorf("newest record = %+v, want Put's size and sha256 and no problem", r)
	}
	if err := backup.Verify(t.Context(), target, recs[0]); err != nil {
		t.Errorf("Verify: %v", err)
	}
	rc, err := target.Get(t.Context(), older.Name)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(got) != "older bundle" {
		t.Errorf("Get = %q", got)
	}
	if err := target.Delete(t.Context(), older.Name); err != nil {
		t.Fatal(err)
	}
	if recs, _ := target.List(t.Context(), "c"); len(recs) != 1 || recs[0].Name != newer.Name {
		t.Errorf("List after Delete = %v, want only %s", recordNames(recs), newer.Name)
	}
	if err := objects.Get(t.Context(), l.demo, l.container, older.Name, nil).Err; !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("the deleted bundle is still there: %v", err)
	}
	if err := target.Delete(t.Context(), older.Name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete of a deleted backup = %v, want ErrNotExist", err)
	}
	if _, err := target.Get(t.Context(), older.Name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Get of a deleted backup = %v, want ErrNotExist", err)
	}
	if _, err := target.Get(t.Context(), "../"+older.Name); err == nil || !strings.Contains(err.Error(), "is not <cluster>-") {
		t.Errorf("Get of a name Name could not make = %v", err)
	}
}

// TestSwiftTargetCreatesAnOwnedContainer: the first Put creates the
// container with the cluster's ownership metadata; a container someone
// else made is used as it is, never marked.
func TestSwiftTargetCreatesAnOwnedContainer(t *testing.T) {
	t.Parallel()
	swiftCreatesAnOwnedContainer(t, &newSwiftLab(t).swiftEnv)
}

func swiftCreatesAnOwnedContainer(t *testing.T, l *swiftEnv) {
	t.Helper()
	swiftPut(t, l.target, swiftRecord("c", swiftTime), "bundle")
	h, err := containers.Get(t.Context(), l.demo, l.container, nil).ExtractMetadata()
	if err != nil {
		t.Fatal(err)
	}
	if h[openstack.SwiftMetaManagedBy] != "taloscluster" || h[openstack.SwiftMetaCluster] != "c" {
		t.Errorf("container metadata = %v, want Managed-By taloscluster and Cluster c", h)
	}

	theirs := l.container + "-theirs"
	if err := containers.Create(t.Context(), l.demo, theirs, nil).Err; err != nil {
		t.Fatal(err)
	}
	swiftPut(t, l.open(t, theirs), swiftRecord("c", swiftTime), "bundle")
	if h, err := containers.Get(t.Context(), l.demo, theirs, nil).ExtractMetadata(); err != nil || len(h) != 0 {
		t.Errorf("someone else's container got metadata %v, %v", h, err)
	}
}

// TestSwiftTargetNeverReplaces: a second Put of one name, and a Put over
// an existing record, store nothing; a Put whose bytes are not its
// record's, and a canceled one, leave no object.
func TestSwiftTargetNeverReplaces(t *testing.T) {
	t.Parallel()
	swiftNeverReplaces(t, &newSwiftLab(t).swiftEnv)
}

func swiftNeverReplaces(t *testing.T, l *swiftEnv) {
	t.Helper()
	rec := swiftRecord("c", swiftTime)
	swiftPut(t, l.target, rec, "first")
	if err := l.target.Put(t.Context(), rec, strings.NewReader("second")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second Put of one name = %v, want ErrExist", err)
	}
	recs, err := l.target.List(t.Context(), "c")
	if err != nil || len(recs) != 1 || backup.Verify(t.Context(), l.target, recs[0]) != nil {
		t.Errorf("after a second Put: %+v, %v; want the first, verified", recs, err)
	}

	stale := swiftRecord("c", swiftTime.Add(time.Hour))
	l.putObject(t, stale.Name+backup.RecordExt, "{}")
	if err := l.target.Put(t.Context(), stale, strings.NewReader("bundle")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Put over an existing record = %v, want ErrExist", err)
	}
	l.assertNoObject(t, stale.Name)

	bad := swiftRecord("c", swiftTime.Add(2*time.Hour))
	bad.BundleSize, bad.BundleSHA256 = 3, strings.Repeat("0", 64)
	if err := l.target.Put(t.Context(), bad, strings.NewReader("abc")); err == nil || !strings.Contains(err.Error(), "its record says") {
		t.Errorf("Put of bytes that are not the record's = %v", err)
	}
	l.assertNoObject(t, bad.Name)

	other := swiftRecord("c", swiftTime.Add(3*time.Hour))
	other.Meta.Cluster = "staging"
	if err := l.target.Put(t.Context(), other, strings.NewReader("x")); err == nil {
		t.Error("Put stored staging's record under c's name")
	}

	ctx, cancel := context.WithCancel(t.Context())
	canceled := swiftRecord("c", swiftTime.Add(4*time.Hour))
	body := io.MultiReader(strings.NewReader("first part"), readerFunc(func([]byte) (int, error) {
		cancel()
		return 0, nil
	}), strings.NewReader("second part"))
	if err := l.target.Put(ctx, canceled, body); !errors.Is(err, context.Canceled) {
		t.Errorf("Put canceled while reading = %v, want context.Canceled", err)
	}
	l.assertNoObject(t, canceled.Name)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func (l *swiftEnv) assertNoObject(t *testing.T, name string) {
	t.Helper()
	if err := objects.Get(t.Context(), l.demo, l.container, name, nil).Err; !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("object %s is there: %v", name, err)
	}
}

// TestSwiftTargetMarksABrokenRecord: a record whose bundle is missing or
// of another size is listed with its Problem; one whose bundle changed
// in place fails Verify; one that does not parse fails List, naming it.
func TestSwiftTargetMarksABrokenRecord(t *testing.T) {
	t.Parallel()
	swiftMarksABrokenRecord(t, &newSwiftLab(t).swiftEnv)
}

func swiftMarksABrokenRecord(t *testing.T, l *swiftEnv) {
	t.Helper()
	missing, short, changed := swiftRecord("c", swiftTime), swiftRecord("c", swiftTime.Add(-time.Hour)), swiftRecord("c", swiftTime.Add(-2*time.Hour))
	swiftPut(t, l.target, missing, "gone")
	swiftPut(t, l.target, short, "full length")
	swiftPut(t, l.target, changed, "the sealed bundle")
	if err := objects.Delete(t.Context(), l.demo, l.container, missing.Name, nil).Err; err != nil {
		t.Fatal(err)
	}
	l.putObject(t, short.Name, "short")
	l.putObject(t, changed.Name, "the sealed bUndle")
	recs, err := l.target.List(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || !strings.Contains(recs[0].Problem, "is missing from swift container") ||
		!strings.Contains(recs[1].Problem, "is 5 bytes, its record says 11") || recs[2].Problem != "" {
		t.Fatalf("List = %+v, want the first two marked", recs)
	}
	if err := backup.Verify(t.Context(), l.target, recs[2]); err == nil || !strings.Contains(err.Error(), "changed after it was stored") {
		t.Errorf("Verify of a changed bundle = %v", err)
	}
	if err := l.target.Delete(t.Context(), missing.Name); err != nil {
		t.Errorf("Delete of a record whose bundle is gone: %v", err)
	}
	l.putObject(t, short.Name+backup.RecordExt, "{")
	if _, err := l.target.List(t.Context(), "c"); err == nil || !strings.Contains(err.Error(), short.Name+backup.RecordExt) {
		t.Errorf("List with a broken record = %v, want an error naming it", err)
	}
}

// TestSwiftTargetIsTheProjects: another project's token sees nothing of
// the container (its own account has none) and is refused the demo
// project's account.
func TestSwiftTargetIsTheProjects(t *testing.T) {
	t.Parallel()
	l := newSwiftLab(t)
	swiftPut(t, l.target, swiftRecord("c", swiftTime), "bundle")
	admin := objectClient(t, l.lab, "admin")
	if err := containers.Get(t.Context(), admin, swiftContainer, nil).Err; !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("the admin project sees the demo project's container: %v", err)
	}
	intruder := *admin
	intruder.Endpoint = l.demo.Endpoint
	if err := containers.Get(t.Context(), &intruder, swiftContainer, nil).Err; !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Errorf("the admin project's token on the demo account = %v, want 403", err)
	}
	unauth := *l.demo
	unauth.ProviderClient = &gophercloud.ProviderClient{HTTPClient: http.Client{}}
	if err := containers.Get(t.Context(), &unauth, swiftContainer, nil).Err; !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Errorf("no token = %v, want 401", err)
	}
}

// TestSwiftTargetThroughCheck: backup.TargetFor picks the container of
// backup.swift through the cloud, and check reads and verifies the
// newest bundle there.
func TestSwiftTargetThroughCheck(t *testing.T) {
	t.Parallel()
	l := newSwiftLab(t)
	cfg := *l.cfg
	cfg.Backup = &config.Backup{MaxAge: "26h", Swift: &config.BackupSwift{Container: swiftContainer}}
	cloud := func(context.Context) (backup.ObjectStore, error) { return l.cloud, nil }
	swiftPut(t, l.target, swiftRecord("c", swiftTime), "bundle")
	b := backup.Check(t.Context(), &cfg, cloud, swiftTime.Add(time.Hour))
	if b.Target != "swift container "+swiftContainer || !b.Verified || b.Attention != "" || b.Name != backup.Name("c", swiftTime) {
		t.Errorf("Check = %+v, want the verified bundle in the container", b)
	}
	b = backup.Check(t.Context(), &cfg, nil, swiftTime.Add(time.Hour))
	if b.Verified || !strings.Contains(b.Attention, "reaches no cloud") {
		t.Errorf("Check without a cloud = %+v", b)
	}
	if _, err := backup.TargetFor(t.Context(), &cfg, nil); err == nil {
		t.Error("TargetFor of backup.swift without a cloud chose a target")
	}
}

// TestSwiftTargetRecordFailureLeavesNoBundle: a record PUT Swift refuses
// (a lab fault) removes the bundle just stored, so no bundle stays
// without its record; the lab's recorder saw the object calls.
func TestSwiftTargetRecordFailureLeavesNoBundle(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{
		{Service: labos.Swift, Method: http.MethodPut, PathPrefix: "/v1/", Nth: 3, Status: http.StatusForbidden},
	}})
	lab := newComputeLab(t, labos.Config{Injector: inj}, threeCPs)
	target, err := lab.cloud.BackupContainer(t.Context(), swiftContainer)
	if err != nil {
		t.Fatal(err)
	}
	rec := swiftRecord("c", swiftTime)
	if err := target.Put(t.Context(), rec, strings.NewReader("bundle")); err == nil || !strings.Contains(err.Error(), "store backup record") {
		t.Fatalf("Put with its record refused = %v", err)
	}
	l := swiftEnv{demo: objectClient(t, lab.lab, "demo"), container: swiftContainer}
	l.assertNoObject(t, rec.Name)
	puts := lab.lab.Recorder().Counts(func(c labnet.Call) string { return c.Service + " " + c.Method })
	if puts["swift PUT"] != 3 || puts["swift DELETE"] != 1 {
		t.Errorf("recorded %v, want the container, bundle and record PUTs and the bundle's DELETE", puts)
	}
}

// corruptingTransport flips the first byte of every bundle PUT on the
// way to Swift, as a broken proxy or disk would.
type corruptingTransport struct{}

func (corruptingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, backup.Ext) && req.Body != nil {
		req = req.Clone(req.Context())
		req.Body = &flipFirst{ReadCloser: req.Body}
	}
	return http.DefaultTransport.RoundTrip(req)
}

type flipFirst struct {
	io.ReadCloser
	done bool
}

func (f *flipFirst) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.done {
		p[0] ^= 0x20
		f.done = true
	}
	return n, err
}

// TestSwiftTargetChecksWhatSwiftStored: a bundle that reached Swift
// other than it was sent (its ETag is not the MD5 of what was sent) is
// refused and deleted, before any record is written.
func TestSwiftTargetChecksWhatSwiftStored(t *testing.T) {
	t.Parallel()
	lab := newComputeLab(t, labos.Config{}, threeCPs)
	lab.connect(t, openstack.Options{HTTPClient: &http.Client{Transport: corruptingTransport{}}})
	target, err := lab.cloud.BackupContainer(t.Context(), swiftContainer)
	if err != nil {
		t.Fatal(err)
	}
	rec := swiftRecord("c", swiftTime)
	if err := target.Put(t.Context(), rec, strings.NewReader("the sealed bundle")); err == nil || !strings.Contains(err.Error(), "were sent") {
		t.Fatalf("Put of a bundle Swift stored otherwise = %v", err)
	}
	l := swiftEnv{demo: objectClient(t, lab.lab, "demo"), container: swiftContainer}
	l.assertNoObject(t, rec.Name)
	l.assertNoObject(t, rec.Name+backup.RecordExt)
}
