package report_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/report/reporttest"
)

// TestEtcdMetrics: etcd's series parse with expfmt; they exist only when
// the member list was read, and a node's sizes and alarms only when it
// answered (one that did not is answered 0, never a zero-size, alarm-free
// node).
func TestEtcdMetrics(t *testing.T) {
	t.Parallel()
	read := &report.EtcdCheck{Done: true, Members: []report.EtcdMember{
		{ID: "1", Hostname: "c-cp-1", Desired: true},
		{ID: "2", Hostname: "c-cp-2", Desired: true, Learner: true},
		{ID: "3", Hostname: "c-cp-9"},
	}, Nodes: []report.EtcdNode{
		{Node: "c-cp-1", Answered: true, DBSizeBytes: 1 << 30, QuotaBytes: 2 << 30, Alarms: []string{"NOSPACE"}},
		{Node: "c-cp-2", Answered: true, DBSizeBytes: 1 << 20},
		{Node: "c-cp-3", Error: "connection refused"},
	}}
	for _, tc := range []struct {
		name string
		etcd *report.EtcdCheck
		want map[string]float64
	}{
		{"not looked at", nil, map[string]float64{}},
		{"member list not read", &report.EtcdCheck{Reason: "no talosconfig"}, map[string]float64{}},
		{"read", read, map[string]float64{
			`talosc_etcd_members{cluster="c"}`:                             3,
			`talosc_etcd_unexplained_members{cluster="c"}`:                 1,
			`talosc_etcd_learners{cluster="c"}`:                            1,
			`talosc_etcd_status_answered{cluster="c",node="c-cp-1"}`:       1,
			`talosc_etcd_status_answered{cluster="c",node="c-cp-2"}`:       1,
			`talosc_etcd_status_answered{cluster="c",node="c-cp-3"}`:       0,
			`talosc_etcd_alarms{cluster="c",node="c-cp-1"}`:                1,
			`talosc_etcd_alarms{cluster="c",node="c-cp-2"}`:                0,
			`talosc_etcd_alarm{alarm="NOSPACE",cluster="c",node="c-cp-1"}`: 1,
			`talosc_etcd_db_size_bytes{cluster="c",node="c-cp-1"}`:         1 << 30,
			`talosc_etcd_db_size_bytes{cluster="c",node="c-cp-2"}`:         1 << 20,
			`talosc_etcd_db_quota_bytes{cluster="c",node="c-cp-1"}`:        2 << 30,
			`talosc_etcd_db_quota_ratio{cluster="c",node="c-cp-1"}`:        0.5,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := report.WriteMetrics(&b, &report.CheckReport{Cluster: "c", Etcd: tc.etcd}); err != nil {
				t.Fatal(err)
			}
			got, err := reporttest.Parse(&b)
			if err != nil {
				t.Fatalf("expfmt rejects the textfile: %v\n%s", err, b.String())
			}
			maps.DeleteFunc(got, func(k string, _ float64) bool { return !strings.HasPrefix(k, "talosc_etcd_") })
			if !maps.Equal(got, tc.want) {
				t.Errorf("etcd series:\n%v\nwant\n%v", slices.Sorted(maps.Keys(got)), tc.want)
			}
		})
	}
}
