package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/report/reporttest"
)

// fullReport is a check that needs attention everywhere, with label values
// that need escaping.
func fullReport() *report.CheckReport {
	pending := 3
	return &report.CheckReport{
		Cluster:   `pro"d\1`,
		CheckedAt: time.Unix(1_800_000_000, 0),
		Incomplete: []report.Reason{
			{Section: "nodes", Reason: "cluster unreachable: \"dial\" C:\\x\nnext line"},
			{Section: "tc-rancher", Reason: "failed"},
		},
		Components: []report.Component{{Component: "talos", UpToDate: true}, {Component: "kubernetes", PatchAvailable: true}},
		Nodes: []report.Node{
			{Name: "c-cp-1", Ready: true},
			{Name: "c-worker-1", Drift: true, Cordoned: true},
		},
		Plugins:      []report.Plugin{{Name: "rancher", OK: false}, {Name: "argocd", OK: true}},
		Certificates: []report.Certificate{{Name: "kubeconfig", NotAfter: time.Unix(1_831_536_000, 0)}, {Name: "etcd-ca", NotAfter: time.Unix(2_115_000_000, 0)}},
		Orphans:      &report.OrphanCheck{Done: true, Found: []report.Orphan{{Kind: "vm", Hostname: "c-worker-3"}}},
		Pending:      &pending,
		Backup:       &report.BackupCheck{Name: "b", Time: time.Unix(1_799_990_000, 0), AgeSeconds: 10_000, Verified: true, Attention: "older than backup.max_age"},
	}
}

func TestMetricsParseWithPrometheusParser(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := report.WriteMetrics(&b, fullReport()); err != nil {
		t.Fatal(err)
	}
	got, err := reporttest.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("expfmt rejects the textfile: %v\n%s", err, b.String())
	}
	c := []string{"cluster", `pro"d\1`}
	key := func(name string, pairs ...string) string { return reporttest.Key(name, append(pairs, c...)...) }
	want := map[string]float64{
		key("talosc_check_ok"):         0,
		key("talosc_check_incomplete"): 1,
		key("talosc_check_incomplete_reason", "section", "nodes", "reason", "cluster unreachable: \"dial\" C:\\x\nnext line"): 1,
		key("talosc_check_incomplete_reason", "section", "tc-rancher", "reason", "failed"):                                    1,
		key("talosc_up_to_date", "component", "talos"):                                                                        1,
		key("talosc_up_to_date", "component", "kubernetes"):                                                                   0,
		key("talosc_node_drift", "node", "c-cp-1"):                                                                            0,
		key("talosc_node_drift", "node", "c-worker-1"):                                                                        1,
		key("talosc_node_cordoned", "node", "c-cp-1"):                                                                         0,
		key("talosc_node_cordoned", "node", "c-worker-1"):                                                                     1,
		key("talosc_node_ready", "node", "c-cp-1"):                                                                            1,
		key("talosc_node_ready", "node", "c-worker-1"):                                                                        0,
		key("talosc_plugin_ok", "plugin", "rancher"):                                                                          0,
		key("talosc_plugin_ok", "plugin", "argocd"):                                                                           1,
		key("talosc_certificate_expiry_timestamp_seconds", "certificate", "kubeconfig"):                                       1_831_536_000,
		key("talosc_certificate_expiry_timestamp_seconds", "certificate", "etcd-ca"):                                          2_115_000_000,
		key("talosc_orphans"):                               1,
		key("talosc_pending_actions"):                       3,
		key("talosc_backup_ok"):                             0,
		key("talosc_backup_age_seconds"):                    10_000,
		key("talosc_backup_last_success_timestamp_seconds"): 1_799_990_000,
		key("talosc_check_timestamp_seconds"):               1_800_000_000,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d:\n%s", len(got), len(want), b.String())
	}
}

// A series nobody observed is absent, never a reassuring zero.
func TestMetricsLeaveOutWhatWasNotObserved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		orphans *report.OrphanCheck
		want    bool
	}{
		{"not looked for", &report.OrphanCheck{Reason: "no provider credentials"}, false},
		{"no orphan search at all", nil, false},
		{"looked, none found", &report.OrphanCheck{Done: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := report.WriteMetrics(&b, &report.CheckReport{Cluster: "c", OK: true, Orphans: tc.orphans}); err != nil {
				t.Fatal(err)
			}
			got, err := reporttest.Parse(&b)
			if err != nil {
				t.Fatal(err)
			}
			v, has := got[reporttest.Key("talosc_orphans", "cluster", "c")]
			if has != tc.want || v != 0 {
				t.Errorf("talosc_orphans present %v value %v, want present %v", has, v, tc.want)
			}
			if got[reporttest.Key("talosc_check_ok", "cluster", "c")] != 1 || got[reporttest.Key("talosc_check_incomplete", "cluster", "c")] != 0 {
				t.Errorf("check_ok/incomplete wrong: %v", got)
			}
			if _, has := got[reporttest.Key("talosc_up_to_date", "cluster", "c", "component", "talos")]; has {
				t.Errorf("an unread component has a series")
			}
			if _, has := got[reporttest.Key("talosc_pending_actions", "cluster", "c")]; has {
				t.Errorf("a check that did not plan has a pending count")
			}
		})
	}
}

// A backup's series exist only when a backup is configured, and its age
// and time only when there is one (verified, for the time).
func TestBackupMetrics(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_799_000_000, 0)
	for _, tc := range []struct {
		name   string
		backup *report.BackupCheck
		want   map[string]float64 // series → value; absent ones must be absent
	}{
		{"not configured", nil, map[string]float64{}},
		{"configured, none yet", &report.BackupCheck{Attention: "no backup"}, map[string]float64{"talosc_backup_ok": 0}},
		{"fresh and verified", &report.BackupCheck{Name: "b", Time: at, AgeSeconds: 60, Verified: true}, map[string]float64{
			"talosc_backup_ok": 1, "talosc_backup_age_seconds": 60, "talosc_backup_last_success_timestamp_seconds": 1_799_000_000,
		}},
		{"not verified", &report.BackupCheck{Name: "b", Time: at, AgeSeconds: 60, Attention: "its bundle does not match"}, map[string]float64{
			"talosc_backup_ok": 0, "talosc_backup_age_seconds": 60,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var check, alone bytes.Buffer
			if err := report.WriteMetrics(&check, &report.CheckReport{Cluster: "c", Backup: tc.backup}); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteBackupMetrics(&alone, "c", tc.backup); err != nil {
				t.Fatal(err)
			}
			for _, b := range []*bytes.Buffer{&check, &alone} {
				got, err := reporttest.Parse(b)
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"talosc_backup_ok", "talosc_backup_age_seconds", "talosc_backup_last_success_timestamp_seconds"} {
					v, has := got[reporttest.Key(name, "cluster", "c")]
					want, wantHas := tc.want[name]
					if has != wantHas || v != want {
						t.Errorf("%s present %v value %v, want present %v value %v", name, has, v, wantHas, want)
					}
				}
				if b == &alone && len(got) != len(tc.want) {
					t.Errorf("the backup's textfile has %d series, want only the backup's %d", len(got), len(tc.want))
				}
			}
		})
	}
}
