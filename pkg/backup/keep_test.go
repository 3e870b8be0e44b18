package backup_test

import (
	"slices"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/backup"
)

func TestPrune(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		times []string // bundle times, any order
		keep  backup.Keep
		drop  []string // the times Prune deletes, newest first
	}{
		{
			name:  "all zero keeps everything",
			times: []string{"2026-12-06T06:00", "2026-12-01T06:00", "2025-01-01T00:00"},
		},
		{
			name:  "hourly: two in one hour keeps the newer",
			times: []string{"2026-12-06T06:45", "2026-12-06T06:15", "2026-12-06T05:30", "2026-12-06T04:30"},
			keep:  backup.Keep{Hourly: 2},
			drop:  []string{"2026-12-06T06:15", "2026-12-06T04:30"},
		},
		{
			name:  "daily over a gap of days counts days with a bundle",
			times: []string{"2026-12-10T01:00", "2026-12-08T23:00", "2026-12-08T01:00", "2026-12-05T12:00", "2026-12-04T12:00"},
			keep:  backup.Keep{Daily: 3},
			drop:  []string{"2026-12-08T01:00", "2026-12-04T12:00"},
		},
		{
			name: "weekly uses ISO weeks (Monday 2026-12-07 opens one)",
			times: []string{
				"2026-12-07T00:30", "2026-12-06T23:30", "2026-12-01T10:00",
				"2026-11-29T10:00", "2026-11-23T10:00",
			},
			keep: backup.Keep{Weekly: 3},
			drop: []string{"2026-12-01T10:00", "2026-11-23T10:00"},
		},
		{
			name:  "monthly",
			times: []string{"2026-12-06T06:00", "2026-12-01T06:00", "2026-11-30T23:00", "2026-11-02T00:00", "2026-10-31T00:00", "2026-09-15T00:00"},
			keep:  backup.Keep{Monthly: 3},
			drop:  []string{"2026-12-01T06:00", "2026-11-02T00:00", "2026-09-15T00:00"},
		},
		{
			name: "rules add up: hourly 1, daily 2, monthly 2",
			times: []string{
				"2026-12-06T06:30", "2026-12-06T06:00", "2026-12-06T01:00",
				"2026-12-05T20:00", "2026-12-04T20:00", "2026-11-20T00:00", "2026-11-10T00:00",
			},
			keep: backup.Keep{Hourly: 1, Daily: 2, Monthly: 2},
			drop: []string{"2026-12-06T06:00", "2026-12-06T01:00", "2026-12-04T20:00", "2026-11-10T00:00"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var recs []backup.Record
			for _, s := range tc.times {
				recs = append(recs, record("prod", at(t, s)))
			}
			var got []string
			for _, r := range backup.Prune(recs, tc.keep) {
				got = append(got, r.Meta.Time.Format("2006-01-02T15:04"))
			}
			if !slices.Equal(got, tc.drop) {
				t.Errorf("Prune dropped %q, want %q", got, tc.drop)
			}
		})
	}
}

func TestPruneNeverDropsTheNewest(t *testing.T) {
	t.Parallel()
	// Given oldest first: the newest is the last one passed in.
	recs := []backup.Record{record("prod", at(t, "2026-11-01T00:00")), record("prod", at(t, "2026-12-06T06:00"))}
	drop := backup.Prune(recs, backup.Keep{Hourly: 1})
	if len(drop) != 1 || !drop[0].Meta.Time.Equal(at(t, "2026-11-01T00:00")) {
		t.Fatalf("Prune dropped %+v, want only the older", drop)
	}
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse("2006-01-02T15:04", s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func record(cluster string, tm time.Time) backup.Record {
	return backup.Record{Name: backup.Name(cluster, tm), Meta: backup.Meta{Format: backup.Format, Cluster: cluster, Time: tm}}
}
