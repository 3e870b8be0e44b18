package talosc

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

func TestPrintCheck_Golden(t *testing.T) {
	t.Parallel()
	nodes := report.Findings{Items: []report.Item{
		{Name: "talos", Configured: "v1.13.8", Observed: "latest patch v1.13.9, latest v1.14.1", Attention: "patch v1.13.9 available, minor v1.14 available", Fix: "set talos.version: v1.13.9 in cluster.yaml, then kubectl talosc plan and converge"},
		{Name: "kubernetes", Configured: "v1.37.0", Observed: "latest patch v1.37.0, latest v1.37.0"},
		{Name: "certificate kubeconfig", Observed: "expires 2027-01-01T00:00:00Z (27 days left)", Attention: "expires in 27 days (2027-01-01)", Fix: "move kubeconfig aside and run kubectl talosc converge"},
		{Name: "orphan vm demo-worker-03", Observed: "id 105, status running", Attention: "owned by the cluster but not a desired machine", Fix: "kubectl talosc converge removes it (it asks first)"},
		{Name: "node demo-controlplane-01", Configured: "talos v1.13.8, kubernetes v1.37.0", Observed: "talos v1.13.8, kubernetes v1.37.0"},
		{Name: "node demo-worker-01", Configured: "talos v1.13.8, kubernetes v1.37.0", Observed: "talos v1.13.7, kubernetes v1.37.0", Attention: "drift, cordoned (SchedulingDisabled)", Fix: "kubectl talosc converge (rolls the pinned versions out, lifts the cordon)"},
		{Name: "node demo-worker-02", Configured: "talos v1.13.8, kubernetes v1.37.0", Observed: "talos v1.13.8, kubernetes v1.37.0", Attention: "not Ready", Fix: "look at the node first: kubectl describe node demo-worker-02 (converge refuses to roll out onto an unhealthy cluster)"},
	}}
	pending := planReport{Pending: 2, Complete: true, Disruption: "Disruption: 2 nodes reboot."}
	healthy := func() *report.CheckReport {
		return &report.CheckReport{Cluster: "demo", Provider: "proxmox", OK: true, Plugins: []report.Plugin{{Name: "argocd", OK: true}, {Name: "rancher"}}, Order: []string{"image", "net", "nodes", "argocd", "plan"}, Sections: map[string]report.Section{
			"image":  {Status: state.StatusSucceeded, Report: raw(t, report.Findings{OK: true})},
			"net":    {Status: state.StatusSucceeded, Report: raw(t, report.Findings{OK: true})},
			"nodes":  {Status: state.StatusSucceeded, Report: raw(t, report.Findings{OK: true, Items: []report.Item{nodes.Items[1], nodes.Items[4]}})},
			"argocd": {Status: state.StatusSucceeded, Report: raw(t, map[string]any{"ok": true})},
			"plan":   {Status: state.StatusSucceeded, Report: raw(t, planReport{OK: true, Complete: true})},
		}}
	}
	troubled := healthy()
	troubled.OK = false
	troubled.Order = []string{"image", "net", "nodes", "rancher", "argocd", "plan"}
	troubled.Sections["nodes"] = report.Section{Status: state.StatusSucceeded, Report: raw(t, nodes)}
	troubled.Sections["rancher"] = report.Section{Status: state.StatusFailed, Error: "rancher: 401 Unauthorized"}
	troubled.Sections["argocd"] = report.Section{Status: state.StatusSucceeded, Report: raw(t, map[string]any{"ok": false})}
	troubled.Sections["plan"] = report.Section{Status: state.StatusSucceeded, Report: raw(t, pending)}
	troubled.Incomplete = []report.Reason{{Section: "nodes", Reason: "demo-worker-04 is configured but not a Kubernetes node"}, {Section: "rancher", Reason: "failed: rancher: 401 Unauthorized"}}
	for name, rep := range map[string]*report.CheckReport{"healthy": healthy(), "troubled": troubled} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			printCheck(&buf, ui.New(&buf, nil), rep, "prod")
			goldentest.Assert(t, filepath.Join("testdata", "check-"+name+".golden"), buf.Bytes())
		})
	}
}
