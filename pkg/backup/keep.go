package backup

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Keep is the retention (cluster.yaml backup.keep): counts of distinct
// hours, days, ISO weeks and months (UTC) for which the newest bundle is
// kept, as restic's --keep-hourly, --keep-daily, --keep-weekly and
// --keep-monthly count them (and etcd-manager's hourly/daily idea). A
// period without a bundle is not counted: daily 7 keeps the newest
// bundle of each of the 7 newest days that have one.
type Keep struct{ Hourly, Daily, Weekly, Monthly int }

// Prune returns the records to delete, newest first: every record no
// rule keeps. The newest record is always kept (every rule keeps the
// newest bundle of its first period); a Keep of all zeros keeps
// everything. Only records of one cluster are passed in.
func Prune(recs []Record, keep Keep) []Record {
	if keep == (Keep{}) || len(recs) == 0 {
		return nil
	}
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, NewestFirst)
	rules := []rule{
		{left: keep.Hourly, period: func(t time.Time) int { return t.Year()*1_000_000 + t.YearDay()*100 + t.Hour() }},
		{left: keep.Daily, period: func(t time.Time) int { return t.Year()*1000 + t.YearDay() }},
		{left: keep.Weekly, period: func(t time.Time) int { y, w := t.ISOWeek(); return y*100 + w }},
		{left: keep.Monthly, period: func(t time.Time) int { return t.Year()*100 + int(t.Month()) }},
	}
	var drop []Record
	for _, r := range sorted {
		kept := false
		for j := range rules {
			kept = rules[j].keeps(r.Meta.Time.UTC()) || kept
		}
		if !kept {
			drop = append(drop, r)
		}
	}
	return drop
}

// NewestFirst orders records by time, newest first (then by name): the
// order of Target.List.
func NewestFirst(a, b Record) int {
	return cmp.Or(b.Meta.Time.Compare(a.Meta.Time), strings.Compare(b.Name, a.Name))
}

// rule keeps the newest bundle of each of its first left periods.
type rule struct {
	left   int
	period func(time.Time) int
	last   int  // the period last kept
	seen   bool // whether last is set
}

// keeps reports whether t, seen newest first, opens a period the rule
// still keeps, and counts it.
func (r *rule) keeps(t time.Time) bool {
	if r.left <= 0 {
		return false
	}
	p := r.period(t)
	if r.seen && p == r.last {
		return false
	}
	r.left--
	r.last, r.seen = p, true
	return true
}
