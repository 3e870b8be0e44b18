package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/state"
)

// Sections reads every section of doc, in run order. ok is false when a
// section failed, did not decode, or reports ok false.
func Sections(doc *state.Document) (secs map[string]Section, order []string, ok bool) {
	secs, order, ok = map[string]Section{}, doc.Names(), true
	for _, name := range order {
		sec, _, err := doc.Section(name)
		if err != nil {
			ok = false
			secs[name] = Section{Status: state.StatusFailed, Error: err.Error()}
			continue
		}
		rs := Section{Status: sec.Status, Report: sec.Outputs, Messages: sec.Messages}
		if sec.Error != nil {
			rs.Error = sec.Error.Message
		}
		secs[name] = rs
		if sec.Status != state.StatusSucceeded || !SectionOK(sec.Outputs) {
			ok = false
		}
	}
	return secs, order, ok
}

// SectionOK reads the "ok" field of a check report; a report without one
// counts as ok.
func SectionOK(raw json.RawMessage) bool {
	var v struct {
		OK *bool `json:"ok"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v.OK == nil {
		return true
	}
	return *v.OK
}

// Build makes the check report of doc, the document a check run ended
// with. plugins names the plugins; the other sections (the phases', the
// front door's plan) report Findings.
func Build(doc *state.Document, provider string, plugins []string, now time.Time) *CheckReport {
	rep := &CheckReport{APIVersion: state.APIVersion, Kind: KindCheck, Cluster: doc.Cluster, Provider: provider, CheckedAt: now.UTC().Truncate(time.Second)}
	rep.Sections, rep.Order, rep.OK = Sections(doc)
	for _, name := range rep.Order {
		sec := rep.Sections[name]
		plugin := slices.Contains(plugins, name)
		if plugin {
			rep.Plugins = append(rep.Plugins, Plugin{Name: name, OK: sec.Status == state.StatusSucceeded && SectionOK(sec.Report)})
		}
		if sec.Status != state.StatusSucceeded {
			rep.Incomplete = append(rep.Incomplete, Reason{Section: name, Reason: notDone(sec)})
			continue
		}
		var f Findings
		if len(sec.Report) > 0 && json.Unmarshal(sec.Report, &f) != nil && !plugin {
			rep.Incomplete = append(rep.Incomplete, Reason{Section: name, Reason: "its report does not decode"})
			rep.OK = false
			continue
		}
		for _, r := range f.Incomplete {
			rep.Incomplete = append(rep.Incomplete, Reason{Section: name, Reason: r})
		}
		rep.Components = append(rep.Components, f.Components...)
		rep.Nodes = append(rep.Nodes, f.Nodes...)
		rep.Certificates = append(rep.Certificates, f.Certificates...)
		if f.Orphans != nil {
			rep.Orphans = f.Orphans
		}
		if f.Pending != nil {
			rep.Pending = f.Pending
		}
		if f.Backup != nil {
			rep.Backup = f.Backup
		}
		if f.Etcd != nil {
			rep.Etcd = f.Etcd
		}
	}
	return rep
}

// notDone says why a section did not report.
func notDone(sec Section) string {
	if sec.Error != "" {
		return fmt.Sprintf("%s: %s", sec.Status, sec.Error)
	}
	return string(sec.Status)
}
