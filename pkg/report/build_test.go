package report_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
)

func put(t *testing.T, doc *state.Document, name string, status state.Status, outputs any, err error) {
	t.Helper()
	sec := state.Section{Status: status}
	if outputs != nil {
		if err := sec.SetOutputs(outputs); err != nil {
			t.Fatal(err)
		}
	}
	if err != nil {
		sec.Fail(err)
	}
	if err := doc.Put(name, sec); err != nil {
		t.Fatal(err)
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	phases := []string{"image", "net", "nodes"}
	plugins := []string{"argocd", "rancher", "absent"}
	nodes := report.Findings{
		OK:           false,
		Incomplete:   []string{"kubernetes releases: timeout"},
		Components:   []report.Component{{Component: "talos", UpToDate: true}},
		Nodes:        []report.Node{{Name: "c-cp-1", Ready: true}},
		Certificates: []report.Certificate{{Name: "talos-ca", NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)}},
		Orphans:      &report.OrphanCheck{Done: true, Found: []report.Orphan{{Kind: "vm", Hostname: "c-worker-9", ID: "109"}}},
		Etcd:         &report.EtcdCheck{Done: true, Members: []report.EtcdMember{{ID: "1", Hostname: "c-cp-1", Desired: true}}},
	}
	for _, tc := range []struct {
		name       string
		fill       func(*state.Document)
		ok         bool
		plugins    []report.Plugin
		incomplete []report.Reason
		pending    int // -1: not planned
	}{
		{
			name: "all ok",
			fill: func(d *state.Document) {
				for _, p := range phases {
					put(t, d, p, state.StatusSucceeded, report.Findings{OK: true}, nil)
				}
				put(t, d, "argocd", state.StatusSucceeded, map[string]any{"ok": true, "apps": 3}, nil)
			},
			ok:      true,
			plugins: []report.Plugin{{Name: "argocd", OK: true}},
			pending: -1,
		},
		{
			name: "a phase needs attention, a plugin says no, another failed",
			fill: func(d *state.Document) {
				put(t, d, "image", state.StatusSucceeded, report.Findings{OK: true}, nil)
				put(t, d, "nodes", state.StatusSucceeded, nodes, nil)
				put(t, d, "rancher", state.StatusSucceeded, map[string]any{"ok": false}, nil)
				put(t, d, "argocd", "", nil, errors.New("hook timed out"))
			},
			plugins: []report.Plugin{{Name: "rancher"}, {Name: "argocd"}},
			incomplete: []report.Reason{
				{Section: "nodes", Reason: "kubernetes releases: timeout"},
				{Section: "argocd", Reason: "failed: hook timed out"},
			},
			pending: -1,
		},
		{
			name: "the front door's plan section is no plugin: its pending actions count",
			fill: func(d *state.Document) {
				put(t, d, "nodes", state.StatusSucceeded, report.Findings{OK: true}, nil)
				put(t, d, "plan", state.StatusSucceeded, map[string]any{"ok": false, "pending": 2, "complete": true, "actions": []any{map[string]any{"kind": "vm"}}}, nil)
			},
			pending: 2,
		},
		{
			name: "a phase whose report does not decode",
			fill: func(d *state.Document) {
				put(t, d, "nodes", state.StatusSucceeded, map[string]any{"ok": true, "items": "not a list"}, nil)
			},
			incomplete: []report.Reason{{Section: "nodes", Reason: "its report does not decode"}},
			pending:    -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := state.New("c", "check")
			tc.fill(doc)
			now := time.Date(2027, 1, 1, 12, 0, 0, 500, time.FixedZone("x", 3600))
			rep := report.Build(doc, "proxmox", plugins, now)
			if rep.OK != tc.ok {
				t.Errorf("ok %v, want %v", rep.OK, tc.ok)
			}
			if diff := cmp.Diff(tc.plugins, rep.Plugins); diff != "" {
				t.Errorf("plugins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.incomplete, rep.Incomplete); diff != "" {
				t.Errorf("incomplete (-want +got):\n%s", diff)
			}
			if (tc.pending < 0) != (rep.Pending == nil) || rep.Pending != nil && *rep.Pending != tc.pending {
				t.Errorf("pending %v, want %d", rep.Pending, tc.pending)
			}
			if rep.APIVersion != state.APIVersion || rep.Kind != "CheckReport" || rep.Cluster != "c" || !rep.CheckedAt.Equal(now.Truncate(time.Second)) || rep.CheckedAt.Location() != time.UTC {
				t.Errorf("envelope %s %s %s %v", rep.APIVersion, rep.Kind, rep.Cluster, rep.CheckedAt)
			}
			if _, err := json.Marshal(rep); err != nil {
				t.Fatal(err)
			}
		})
	}
	doc := state.New("c", "check")
	put(t, doc, "nodes", state.StatusSucceeded, nodes, nil)
	rep := report.Build(doc, "proxmox", plugins, time.Now())
	if diff := cmp.Diff(nodes.Components, rep.Components); diff != "" || len(rep.Nodes) != 1 || len(rep.Certificates) != 1 || rep.Orphans == nil || len(rep.Orphans.Found) != 1 || rep.Etcd == nil || len(rep.Etcd.Members) != 1 {
		t.Errorf("the nodes findings are not carried: %+v %s", rep, diff)
	}
}
