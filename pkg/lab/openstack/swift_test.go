package openstack_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/objects"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// TestSwiftContainersThroughGophercloud: the account lists the
// project's containers with their counts; container metadata is set on
// create, changed and removed by POST; a container holding objects is
// not deleted (409), an empty one is; a PUT whose ETag is not the MD5 of
// what arrived is refused (422).
func TestSwiftContainersThroughGophercloud(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	sc, err := gos.NewObjectStorageV1(login(t, lab, "demo", "demo"), gophercloud.EndpointOpts{Region: lab.Region()})
	noErr(t, err)
	ctx := t.Context()
	noErr(t, containers.Create(ctx, sc, "b", containers.CreateOpts{Metadata: map[string]string{"Owner": "x", "Keep": "y"}}).Err)
	noErr(t, containers.Create(ctx, sc, "a", nil).Err)
	noErr(t, objects.Create(ctx, sc, "b", "o", objects.CreateOpts{Content: strings.NewReader("12345")}).Err)
	pages, err := containers.List(sc, nil).AllPages(ctx)
	noErr(t, err)
	list, err := containers.ExtractInfo(pages)
	noErr(t, err)
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" || list[1].Count != 1 || list[1].Bytes != 5 {
		t.Errorf("containers = %+v, want a, then b with one object of 5 bytes", list)
	}
	noErr(t, containers.Update(ctx, sc, "b", containers.UpdateOpts{Metadata: map[string]string{"Owner": "z"}, RemoveMetadata: []string{"Keep"}}).Err)
	meta, err := containers.Get(ctx, sc, "b", nil).ExtractMetadata()
	noErr(t, err)
	if len(meta) != 1 || meta["Owner"] != "z" {
		t.Errorf("metadata after update = %v, want only Owner z", meta)
	}
	wantCode(t, containers.Delete(ctx, sc, "b").Err, http.StatusConflict)
	noErr(t, containers.Delete(ctx, sc, "a").Err)
	wantCode(t, containers.Delete(ctx, sc, "a").Err, http.StatusNotFound)
	err = objects.Create(ctx, sc, "b", "p", objects.CreateOpts{Content: strings.NewReader("abc"), ETag: "0123456789abcdef0123456789abcdef"}).Err
	wantCode(t, err, http.StatusUnprocessableEntity)
	wantCode(t, objects.Create(ctx, sc, "missing", "p", objects.CreateOpts{Content: strings.NewReader("abc")}).Err, http.StatusNotFound)
}
