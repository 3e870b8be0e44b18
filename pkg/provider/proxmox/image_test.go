package proxmox_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/lab/imagefactory/imagefactorytest"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// isoSpec is the boot ISO served by a lab Image Factory.
func isoSpec(t *testing.T) provider.ImageSpec {
	t.Helper()
	f := imagefactorytest.NewServer(t, labTalos)
	c, err := factory.New(f.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.ImageURL(id, labTalos, factory.ArtifactNoCloudISO)
	if err != nil {
		t.Fatal(err)
	}
	return provider.ImageSpec{
		Name: factory.BootImageName(labTalos, id), TalosVersion: labTalos, SchematicID: id, Artifact: factory.ArtifactNoCloudISO, URL: u,
		Fetch: func(ctx context.Context, dst io.Writer) (int64, error) {
			n, _, err := c.Download(ctx, id, labTalos, factory.ArtifactNoCloudISO, dst, -1, "")
			return n, err
		},
	}
}

// ensureISO preflights and ensures the ISO.
func (l *pxLab) ensureISO(t *testing.T, spec provider.ImageSpec, plan *provider.Plan) (provider.Image, error) {
	t.Helper()
	if _, err := l.cloud.Preflight(t.Context(), l.cfg); err != nil {
		t.Fatal(err)
	}
	return l.cloud.EnsureImage(t.Context(), spec, plan)
}

// isoOn returns the ISO's bytes on node's "local" storage.
func (l *pxLab) isoOn(t *testing.T, node string, spec provider.ImageSpec) []byte {
	t.Helper()
	data, ok := l.srv.Volume(node, "local:iso/"+factory.ProxmoxISOName(spec.Name))
	if !ok {
		t.Fatalf("no boot ISO on %s", node)
	}
	return data
}

func artifact(t *testing.T, spec provider.ImageSpec) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := spec.Fetch(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEnsureImage_DownloadsOncePerNodeThenReuses(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	spec := isoSpec(t)
	plan := &provider.Plan{}
	img, err := l.ensureISO(t, spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	volid := "local:iso/" + factory.ProxmoxISOName(spec.Name)
	if img.ID != volid || img.Name != spec.Name {
		t.Errorf("image %+v, want id %s", img, volid)
	}
	changes := plan.Changes()
	if len(changes) != 2 || changes[0].Kind != proxmox.KindISO || changes[0].Name != "pve1/"+volid || changes[1].Name != "pve2/"+volid ||
		!strings.Contains(changes[0].Detail, "downloaded by the node from "+spec.URL) {
		t.Errorf("changes %+v", changes)
	}
	want := artifact(t, spec)
	for _, n := range []string{"pve1", "pve2"} {
		if got := l.isoOn(t, n, spec); !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes, want the artifact's %d", n, len(got), len(want))
		}
	}
	downloads := 0
	for _, task := range l.srv.Tasks() {
		if task.Type == "download" {
			downloads++
		}
	}
	if downloads != 2 {
		t.Errorf("%d download tasks, want 2", downloads)
	}

	l.srv.Recorder().Reset()
	again := &provider.Plan{}
	img2, err := l.cloud.EnsureImage(t.Context(), spec, again)
	if err != nil || img2 != img || len(again.Changes()) != 0 {
		t.Errorf("re-run = %+v, %v, changes %+v", img2, err, again.Changes())
	}
	l.noMutations(t)
	if found, ok, err := l.cloud.FindImage(t.Context(), spec); !ok || err != nil || found != img {
		t.Errorf("FindImage = %+v, %v, %v", found, ok, err)
	}
}

// On a shared iso_storage the ISO goes to the first compute node only.
func TestEnsureImage_SharedStorageOnce(t *testing.T) {
	t.Parallel()
	o := twoNodes()
	o.Storages = []labpx.Storage{
		{ID: "local", Content: []string{"iso"}},
		{ID: "local-lvm", Type: "lvmthin", Content: []string{"images"}},
		{ID: "isos", Type: "nfs", Content: []string{"iso"}, Shared: true},
	}
	l := newLab(t, o, nil, labCluster{extra: "  cidata_storage: local\n"})
	l.cfg.Proxmox.ISOStorage = "isos"
	plan := &provider.Plan{}
	img, err := l.ensureISO(t, isoSpec(t), plan)
	if err != nil || !strings.HasPrefix(img.ID, "isos:iso/") || len(plan.Changes()) != 1 || !strings.HasPrefix(plan.Changes()[0].Name, "pve1/") {
		t.Errorf("image %+v, %v, changes %+v", img, err, plan.Changes())
	}
}

// Without Sys.AccessNetwork on a node the ISO is uploaded there, fetched
// from the factory once.
func TestEnsureImage_UploadsWithoutSysAccessNetwork(t *testing.T) {
	t.Parallel()
	var privs []string
	for _, p := range labpx.TalosClusterPrivileges() {
		if p != "Sys.AccessNetwork" {
			privs = append(privs, p)
		}
	}
	l := newLab(t, twoNodes(), []labpx.ACL{{Path: "/", Privs: privs}}, labCluster{})
	spec := isoSpec(t)
	plan := &provider.Plan{}
	if _, err := l.ensureISO(t, spec, plan); err != nil {
		t.Fatal(err)
	}
	if c := plan.Changes(); len(c) != 2 || !strings.Contains(c[0].Detail, "uploaded (the token lacks Sys.AccessNetwork on /nodes/pve1)") {
		t.Errorf("changes %+v", c)
	}
	want := artifact(t, spec)
	for _, n := range []string{"pve1", "pve2"} {
		if got := l.isoOn(t, n, spec); !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes, want %d", n, len(got), len(want))
		}
	}
	for _, task := range l.srv.Tasks() {
		if task.Type == "download" {
			t.Errorf("download task %s without Sys.AccessNetwork", task.UPID)
		}
	}
}

func TestEnsureImage_DownloadEndingWithWarningsIsAccepted(t *testing.T) {
	t.Parallel()
	l := newLab(t, labpx.Options{DatacenterFirewall: true}, nil, labCluster{})
	l.srv.FailTasks(labpx.TaskFault{Type: "download", ExitStatus: "WARNINGS: 1", Log: []string{"WARN: certificate is self-signed"}})
	img, err := l.ensureISO(t, isoSpec(t), &provider.Plan{})
	if err != nil || img.ID == "" {
		t.Fatalf("EnsureImage = %+v, %v", img, err)
	}
	if !strings.Contains(l.logs.String(), "ended with 1 warning(s)") {
		t.Errorf("warnings not logged: %q", l.logs)
	}
}

func TestEnsureImage_FailedDownloadIsAnError(t *testing.T) {
	t.Parallel()
	l := newLab(t, labpx.Options{DatacenterFirewall: true}, nil, labCluster{})
	l.srv.FailTasks(labpx.TaskFault{Type: "download", ExitStatus: "download failed: 404 Not Found"})
	spec := isoSpec(t)
	_, err := l.ensureISO(t, spec, &provider.Plan{})
	if err == nil || !strings.HasPrefix(err.Error(), "create proxmox:iso pve1/local:iso/") || !strings.Contains(err.Error(), "download the boot ISO on node pve1") {
		t.Errorf("err = %v", err)
	}
	if _, ok, err := l.cloud.FindImage(t.Context(), spec); ok || err != nil {
		t.Errorf("FindImage after a failed download = %v, %v", ok, err)
	}
}

func TestEnsureImage_DryRunMutatesNothing(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	plan := &provider.Plan{DryRun: true}
	img, err := l.ensureISO(t, isoSpec(t), plan)
	if err != nil || img.ID != "" || len(plan.Changes()) != 2 {
		t.Errorf("dry run = %+v, %v, changes %+v", img, err, plan.Changes())
	}
	l.noMutations(t)
}

// FindImage (status) runs the preflight itself: the boot ISO is looked for
// on the compute nodes it finds.
func TestFindImage_RunsThePreflight(t *testing.T) {
	t.Parallel()
	l := newLab(t, labpx.Options{DatacenterFirewall: true}, nil, labCluster{})
	if _, ok, err := l.cloud.FindImage(t.Context(), isoSpec(t)); ok || err != nil {
		t.Errorf("FindImage before anything = %v, %v; want not found", ok, err)
	}
}
