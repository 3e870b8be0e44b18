package proxmox_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

func TestVersionNodesAndClusterWithGoProxmox(t *testing.T) {
	t.Parallel()
	srv := startLab(t, proxmox.Options{Nodes: []proxmox.Node{{Name: "pve1"}, {Name: "pve2", MaxMem: 32 << 30}, {Name: "pve3", Offline: true}}})
	c, ctx := adminClient(t, srv), t.Context()

	v, err := c.Version(ctx)
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if diff := cmp.Diff(&goproxmox.Version{Release: "9.1", Version: "9.1.1", RepoID: "4b06efb5db453f29"}, v); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}

	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Node] = n.Status
	}
	if diff := cmp.Diff(map[string]string{"pve1": "online", "pve2": "online", "pve3": "offline"}, got); diff != "" {
		t.Errorf("node statuses (-want +got):\n%s", diff)
	}
	if nodes[1].MaxMem != 32<<30 || nodes[1].MaxCPU != 16 || nodes[1].SSLFingerprint == "" {
		t.Errorf("pve2 = %+v, want 32 GiB, 16 CPUs and a fingerprint", nodes[1])
	}

	n, err := c.Node(ctx, "pve1")
	if err != nil {
		t.Fatalf("Node(pve1): %v", err)
	}
	if n.Memory.Total != 64<<30 || !strings.HasPrefix(n.PVEVersion, "pve-manager/9.1.1/") {
		t.Errorf("pve1 status = memory %d, version %q", n.Memory.Total, n.PVEVersion)
	}
	if _, err := c.Node(ctx, "pve3"); !goproxmox.IsNodeUnreachable(err) {
		t.Errorf("Node(pve3) on an offline node: err = %v, want a 595 node-unreachable error", err)
	}
	if _, err := c.Node(ctx, "nope"); !goproxmox.IsNotFound(err) {
		t.Errorf("Node(nope): err = %v, want not found", err)
	}

	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatalf("Cluster: %v", err)
	}
	if cl.Quorate != 1 || len(cl.Nodes) != 3 {
		t.Errorf("cluster status: quorate %d, %d nodes", cl.Quorate, len(cl.Nodes))
	}
	id, err := cl.NextID(ctx)
	if err != nil || id != 100 {
		t.Errorf("NextID = %d, %v; want 100", id, err)
	}
	res, err := cl.Resources(ctx, "node")
	if err != nil {
		t.Fatalf("Resources(node): %v", err)
	}
	if len(res) != 3 || res[0].Type != "node" || res[0].ID != "node/pve1" {
		t.Errorf("node resources = %+v", res)
	}
	storages, err := cl.Resources(ctx, "storage")
	if err != nil {
		t.Fatalf("Resources(storage): %v", err)
	}
	// Two storages on each of the two online nodes.
	if len(storages) != 4 || storages[0].ID != "storage/pve1/local" || storages[0].PluginType != "dir" {
		t.Errorf("storage resources = %+v", storages)
	}
}

func TestUnauthenticatedAndUnknownRequests(t *testing.T) {
	t.Parallel()
	srv := startLab(t, proxmox.Options{})
	hc := trustingClient(t, srv)
	get := func(path, auth string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.APIURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("GET %s: body %q is not JSON", path, body)
		}
		return res.StatusCode, m
	}
	if code, _ := get("/version", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", code)
	}
	if code, _ := get("/version", "PVEAPIToken="+proxmox.DefaultTokenID+"=wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: status %d, want 401", code)
	}
	code, body := get("/version", "PVEAPIToken="+proxmox.DefaultTokenID+"="+proxmox.DefaultTokenSecret)
	if code != http.StatusOK || body["data"].(map[string]any)["release"] != "9.1" {
		t.Errorf("good token: %d %v", code, body)
	}
	// Unknown API paths answer 501 like pveproxy; the test server reports
	// them, so swap the callback for this one request.
	var unhandled atomic.Int32
	srv.OnUnhandled(func(string, string) { unhandled.Add(1) })
	if code, _ := get("/nodes/pve1/ceph/status", "PVEAPIToken="+proxmox.DefaultTokenID+"="+proxmox.DefaultTokenSecret); code != http.StatusNotImplemented {
		t.Errorf("unknown path: status %d, want 501", code)
	}
	if n := unhandled.Load(); n != 1 {
		t.Errorf("unhandled callback ran %d times, want 1", n)
	}
}
