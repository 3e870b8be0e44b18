package talosc

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// demoCluster is a 3+workers cluster.yaml's pools.
func demoCluster(workers int) *config.Cluster {
	return &config.Cluster{Name: "demo", ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: 3}, Workers: config.Pools{{Name: "worker", Count: workers}}}
}

func raw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// kubeNode is one node as the nodes section reports it.
func kubeNode(name string, ready, cordoned bool, ip string) map[string]any {
	return map[string]any{"name": name, "ready": ready, "kubeletVersion": "v1.35.4", "osImage": "Talos (v1.13.8)", "internalIP": ip, "unschedulable": cordoned}
}

func machine(name, role, pool, addr string) map[string]any {
	return map[string]any{"hostname": name, "id": "vm-" + name, "role": role, "pool": pool, "address": addr}
}

func statusReport(t *testing.T, nodes map[string]any, nodesStatus state.Status, messages ...string) Report {
	t.Helper()
	rep := Report{Cluster: "demo", Provider: "proxmox", Order: []string{"image", "net", "nodes", "rancher"}, Sections: map[string]ReportSection{
		"image":   {Status: state.StatusSucceeded, Report: raw(t, map[string]any{"image": map[string]any{"name": "talos-v1.13.8"}})},
		"net":     {Status: state.StatusSucceeded, Report: raw(t, map[string]any{"kubernetes": map[string]any{"vip": "127.20.0.2", "advertised": "127.20.0.2"}, "ingress": map[string]any{"vip": "127.20.0.3"}})},
		"nodes":   {Status: nodesStatus, Report: raw(t, nodes), Messages: messages},
		"rancher": {Status: state.StatusFailed, Error: "rancher: 401 Unauthorized"},
	}}
	return rep
}

func TestPrintStatus_Golden(t *testing.T) {
	t.Parallel()
	cp, w := config.RoleControlPlane, config.RoleWorker
	all := []any{
		machine("demo-controlplane-01", cp, cp, "127.20.0.11"), machine("demo-controlplane-02", cp, cp, "127.20.0.12"), machine("demo-controlplane-03", cp, cp, "127.20.0.13"),
		machine("demo-worker-01", w, "worker", "127.20.0.21"), machine("demo-worker-02", w, "worker", "127.20.0.22"), machine("demo-worker-03", w, "worker", "127.20.0.23"),
	}
	healthy := []any{
		kubeNode("demo-controlplane-01", true, false, "127.20.0.11"), kubeNode("demo-controlplane-02", true, false, "127.20.0.12"), kubeNode("demo-controlplane-03", true, false, "127.20.0.13"),
		kubeNode("demo-worker-01", true, false, "127.20.0.21"), kubeNode("demo-worker-02", true, false, "127.20.0.22"), kubeNode("demo-worker-03", true, false, "127.20.0.23"),
	}
	up := func(nodes []any, machines []any) map[string]any {
		return map[string]any{"machines": machines, "up": true, "bootstrapped": true, "talosEndpoint": "127.20.0.11", "kubernetesEndpoint": "https://127.20.0.2:6443", "nodes": nodes}
	}
	// A NotReady node, a cordoned one, an owned machine that is no Node
	// (demo-worker-03), a desired one with no machine (demo-worker-04),
	// and a Node no machine explains.
	troubled := []any{healthy[0], healthy[1], kubeNode("demo-controlplane-03", false, false, "127.20.0.13"), healthy[3], kubeNode("demo-worker-02", true, true, "127.20.0.22"), kubeNode("stray-01", true, false, "127.20.0.99")}
	failed := statusReport(t, nil, state.StatusFailed)
	failed.Sections["nodes"] = ReportSection{Status: state.StatusFailed, Error: "proxmox: 401 authentication failure"}
	tests := []struct {
		name    string
		rep     Report
		workers int
	}{
		{"healthy", statusReport(t, up(healthy, all), state.StatusSucceeded), 3},
		{"troubled", statusReport(t, up(troubled, all), state.StatusSucceeded), 4},
		{"unreachable", statusReport(t, map[string]any{"machines": all, "up": false, "bootstrapped": true, "talosEndpoint": "127.20.0.11"}, state.StatusSucceeded, "kubernetes api not reachable: dial tcp 127.20.0.2:6443: connection refused"), 3},
		{"new", statusReport(t, map[string]any{"machines": []any{}, "up": false, "bootstrapped": false}, state.StatusSucceeded), 3},
		{"nodes-failed", failed, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			printStatus(&buf, ui.New(&buf, nil), tt.rep, demoCluster(tt.workers), "prod")
			goldentest.Assert(t, filepath.Join("testdata", "status-"+tt.name+".golden"), buf.Bytes())
		})
	}
}
