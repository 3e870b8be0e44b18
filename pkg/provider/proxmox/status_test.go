package proxmox_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
)

func TestStatus_ReportsNodesAndOwnedResources(t *testing.T) {
	t.Parallel()
	o := twoNodes()
	o.Nodes = append(o.Nodes, labpx.Node{Name: "pve3", Offline: true})
	l := newLab(t, o, nil, labCluster{})
	st, err := l.cloud.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := "proxmox: " + l.srv.URL + " (online nodes: pve1, pve2)"; st.Summary != want {
		t.Errorf("summary %q, want %q", st.Summary, want)
	}
	want := map[string]string{"url": l.srv.URL, "online_nodes": "pve1,pve2", "storage": "local-lvm", "iso_storage": "local"}
	if diff := cmp.Diff(want, st.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"vms": 0, "pools": 0}, st.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if strings.Contains(st.Summary, tokenSecret) {
		t.Error("the summary names the token")
	}
	l.noMutations(t)
}
