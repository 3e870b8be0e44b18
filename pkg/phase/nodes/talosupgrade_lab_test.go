package nodes_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes"
	"github.com/talosc/talosc/pkg/state"
)

// labNodes are the lab's Talos nodes as its control API reports them.
func labNodes(t *testing.T, l *lab.Lab) []talosnode.NodeStatus {
	t.Helper()
	rec := httptest.NewRecorder()
	l.ControlHandler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/nodes", http.NoBody))
	var out []talosnode.NodeStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("GET /nodes: %v", err)
	}
	return out
}

// upgradeChanges are a section's Talos installation changes.
func upgradeChanges(sec state.Section) []state.Change {
	var out []state.Change
	for _, c := range sec.Plan {
		if c.Kind == nodes.KindTalosNode {
			out = append(out, c)
		}
	}
	return out
}

// TestTalosUpgradeOnLab: a cluster built at the lab's default Talos is
// upgraded to its newest by editing talos.version: plan shows each node's
// install and reboot and changes nothing; converge brings every node to
// the new version; then nothing is left to do.
func TestTalosUpgradeOnLab(t *testing.T) {
	d := newLabDir(t)
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("first converge: %v\n%s", err, stderr)
	}
	d.edit(t, "talos:\n  version: "+lab.DefaultTalosVersion+"\n", "talos:\n  version: "+lab.NewestTalosVersion+"\n")
	sec, stderr, err := d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan of the upgrade: %v\n%s", err, stderr)
	}
	if got := upgradeChanges(sec); len(got) != 4 || got[0].Name != "drift-controlplane-01" || got[2].Name != "drift-worker-01" {
		t.Fatalf("plan = %+v, want install and reboot of the control plane, then the worker", got)
	}
	for _, n := range labNodes(t, d.lab) {
		if n.Version != lab.DefaultTalosVersion {
			t.Errorf("the plan changed %s to %s", n.Hostname, n.Version)
		}
	}
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("converge of the upgrade: %v\n%s", err, stderr)
	}
	for _, n := range labNodes(t, d.lab) {
		if n.Version != lab.NewestTalosVersion {
			t.Errorf("%s runs %s after the upgrade", n.Hostname, n.Version)
		}
	}
	sec, stderr, err = d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan after the upgrade: %v\n%s", err, stderr)
	}
	if len(sec.Plan) != 0 {
		t.Errorf("after the upgrade, plan still changes %+v", sec.Plan)
	}
}

// TestBothUpgradesOnLab: one edit of both pins (Talos v1.13.8 -> v1.14.1,
// Kubernetes v1.34.3 -> v1.36.1) plans the Talos upgrades before both
// Kubernetes steps, and converge leaves every node, every kubelet and the
// API at the pins, with nothing left to do.
func TestBothUpgradesOnLab(t *testing.T) {
	d := newLabDir(t)
	d.edit(t, "kubernetes:\n  version: v1.35.4\n", "kubernetes:\n  version: v1.34.3\n")
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("first converge: %v\n%s", err, stderr)
	}
	d.edit(t, "kubernetes:\n  version: v1.34.3\n", "kubernetes:\n  version: v1.36.1\n")
	d.edit(t, "talos:\n  version: "+lab.DefaultTalosVersion+"\n", "talos:\n  version: "+lab.NewestTalosVersion+"\n")
	sec, stderr, err := d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	var order []string
	for _, c := range sec.Plan {
		if c.Kind == nodes.KindTalosNode || c.Kind == nodes.KindKubeAPIServer {
			order = append(order, c.Kind+" "+c.Detail)
		}
	}
	if len(order) != 6 || !strings.HasPrefix(order[4], nodes.KindKubeAPIServer+" v1.34.3 -> v1.35.4") || !strings.HasPrefix(order[5], nodes.KindKubeAPIServer+" v1.35.4 -> v1.36.1") {
		t.Errorf("plan order = %q, want both nodes' Talos upgrades, then the apiserver's two steps", order)
	}
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("converge: %v\n%s", err, stderr)
	}
	kc, err := kube.Load(filepath.Join(d.dir, config.KubeconfigFile), kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := kc.ServerVersion(t.Context()); err != nil || v != "v1.36.1" {
		t.Errorf("/version = %s, %v", v, err)
	}
	ns, err := kc.Nodes(t.Context())
	if err != nil || len(ns) != 2 {
		t.Fatalf("nodes %v, %v", ns, err)
	}
	for _, n := range ns {
		if n.KubeletVersion != "v1.36.1" || !n.Ready || n.TalosVersion() != lab.NewestTalosVersion {
			t.Errorf("node %s: kubelet %s, ready %v, Talos %s", n.Name, n.KubeletVersion, n.Ready, n.TalosVersion())
		}
	}
	sec, stderr, err = d.run(t, phase.ActionPlan)
	if err != nil {
		t.Fatalf("plan after: %v\n%s", err, stderr)
	}
	if len(sec.Plan) != 0 {
		t.Errorf("after the upgrades, plan still changes %+v", sec.Plan)
	}
}
