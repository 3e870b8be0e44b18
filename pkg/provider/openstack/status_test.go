package openstack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"

	labos "github.com/talosc/talosc/pkg/lab/openstack"
)

func TestStatus_CountsOwnedResources(t *testing.T) {
	t.Parallel()
	l := newComputeLab(t, labos.Config{}, threeCPs)
	l.boot(t)
	// The test's ports and network carry no tags yet: tag the network and
	// two ports as the network half would, one of them the legacy way.
	inv := l.lab.Inventory()
	netID := inv.Networks[slices.IndexFunc(inv.Networks, func(n labos.Network) bool { return n.Name == "c-net" })].ID
	for _, x := range []struct {
		collection, id string
		tags           []string
	}{
		{"networks", netID, []string{"managed-by=taloscluster", "cluster=c"}},
		{"ports", inv.Ports[0].ID, []string{"managed-by=taloscluster", "cluster=c"}},
		{"ports", inv.Ports[1].ID, []string{"managed-by=clusterctl", "cluster=c"}},
		{"ports", inv.Ports[2].ID, []string{"cluster=c"}},
	} {
		if _, err := attributestags.ReplaceAll(t.Context(), l.network, x.collection, x.id, attributestags.ReplaceAllOpts{Tags: x.tags}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	l.lab.Recorder().Reset()
	st, err := l.cloud.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"servers": 3, "ports": 2, "networks": 1, "subnets": 0, "routers": 0, "floatingips": 0, "security_groups": 0}
	if diff := cmp.Diff(want, st.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if want := "openstack: " + l.lab.AuthURL() + " (region RegionOne, project demo)"; st.Summary != want {
		t.Errorf("summary %q, want %q", st.Summary, want)
	}
	if st.Details["project"] != "demo" || st.Details["region"] != "RegionOne" || st.Details["url"] != l.lab.AuthURL() {
		t.Errorf("details %v", st.Details)
	}
	if strings.Contains(st.Summary, l.cred.ID) || strings.Contains(st.Summary, l.cred.Secret) {
		t.Error("the summary names the credential")
	}
	if m := l.lab.Recorder().Mutations(); len(m) != 0 {
		t.Errorf("mutations: %+v", m)
	}
}
