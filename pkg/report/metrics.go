package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MetricPrefix starts every metric name.
const MetricPrefix = "talosc_"

// family is one metric family of the textfile: every sample carries the
// cluster label first.
type family struct {
	name, help string
	samples    []sample
}

type sample struct {
	labels []string // name, value, name, value...
	value  float64
}

func (f *family) add(value float64, labels ...string) {
	f.samples = append(f.samples, sample{labels: labels, value: value})
}

// WriteMetrics writes rep as Prometheus metrics in the text exposition
// format node-exporter's textfile collector reads: every family has HELP
// and TYPE (all are gauges) and every sample a cluster label. A series
// that was not observed is absent, never zero: the orphan count exists
// only when the search was done, a component's only when its releases were
// read; talosc_check_incomplete says that something was not looked at.
func WriteMetrics(w io.Writer, rep *CheckReport) error {
	return writeFamilies(w, rep.Cluster, families(rep))
}

// WriteBackupMetrics writes only the backup's metrics of cluster (what
// `kubectl talosc backup --textfile` writes): a textfile of its own, so
// that check's and backup's never overwrite each other's series.
func WriteBackupMetrics(w io.Writer, cluster string, b *BackupCheck) error {
	return writeFamilies(w, cluster, backupFamilies(b))
}

func writeFamilies(w io.Writer, cluster string, fams []*family) error {
	var b strings.Builder
	for _, f := range fams {
		if len(f.samples) == 0 {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s%s %s\n# TYPE %s%s gauge\n", MetricPrefix, f.name, escapeHelp(f.help), MetricPrefix, f.name)
		for _, s := range f.samples {
			b.WriteString(MetricPrefix + f.name + "{cluster=\"" + escapeLabel(cluster) + "\"")
			for i := 0; i+1 < len(s.labels); i += 2 {
				b.WriteString("," + s.labels[i] + "=\"" + escapeLabel(s.labels[i+1]) + "\"")
			}
			b.WriteString("} " + strconv.FormatFloat(s.value, 'f', -1, 64) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func families(rep *CheckReport) []*family {
	ok := &family{name: "check_ok", help: "1 when everything is up to date and the check was complete (check exits 0), else 0."}
	ok.add(bit(rep.OK))
	incomplete := &family{name: "check_incomplete", help: "1 when the check could not look at everything (see talosc_check_incomplete_reason), else 0."}
	incomplete.add(bit(len(rep.Incomplete) > 0))
	reasons := &family{name: "check_incomplete_reason", help: "1 for each reason the check is incomplete."}
	for _, r := range rep.Incomplete {
		reasons.add(1, "section", r.Section, "reason", r.Reason)
	}
	upToDate := &family{name: "up_to_date", help: "1 when the pinned component has neither a newer patch nor a newer minor release, else 0."}
	for _, c := range rep.Components {
		upToDate.add(bit(c.UpToDate), "component", c.Component)
	}
	drift := &family{name: "node_drift", help: "1 when the node runs other Talos or Kubernetes versions than cluster.yaml pins, else 0."}
	cordoned := &family{name: "node_cordoned", help: "1 when the node is cordoned (SchedulingDisabled), else 0."}
	ready := &family{name: "node_ready", help: "1 when the node is Ready, else 0."}
	for _, n := range rep.Nodes {
		drift.add(bit(n.Drift), "node", n.Name)
		cordoned.add(bit(n.Cordoned), "node", n.Name)
		ready.add(bit(n.Ready), "node", n.Name)
	}
	plugins := &family{name: "plugin_ok", help: "1 when the plugin's check succeeded and reported ok, else 0."}
	for _, p := range rep.Plugins {
		plugins.add(bit(p.OK), "plugin", p.Name)
	}
	expiry := &family{name: "certificate_expiry_timestamp_seconds", help: "When the certificate expires (its NotAfter), in seconds since the Unix epoch."}
	for _, c := range rep.Certificates {
		expiry.add(float64(c.NotAfter.Unix()), "certificate", c.Name)
	}
	orphans := &family{name: "orphans", help: "How many owned resources no desired machine explains; absent when they were not looked for."}
	if rep.Orphans != nil && rep.Orphans.Done {
		orphans.add(float64(len(rep.Orphans.Found)))
	}
	pending := &family{name: "pending_actions", help: "How many actions converge would take; absent when check did not plan (no provider credentials)."}
	if rep.Pending != nil {
		pending.add(float64(*rep.Pending))
	}
	at := &family{name: "check_timestamp_seconds", help: "When the check ran, in seconds since the Unix epoch."}
	at.add(float64(rep.CheckedAt.Unix()))
	fams := []*family{ok, incomplete, reasons, upToDate, drift, cordoned, ready, plugins, expiry, orphans, pending}
	fams = append(fams, backupFamilies(rep.Backup)...)
	fams = append(fams, etcdFamilies(rep.Etcd)...)
	return append(fams, at)
}

// backupFamilies are the newest backup's metrics; absent when no backup
// is configured, and the age and time absent when there is no backup.
func backupFamilies(b *BackupCheck) []*family {
	ok := &family{name: "backup_ok", help: "1 when the newest backup is verified and younger than backup.max_age, else 0."}
	age := &family{name: "backup_age_seconds", help: "How old the newest backup is, in seconds."}
	last := &family{name: "backup_last_success_timestamp_seconds", help: "When the newest verified backup was taken, in seconds since the Unix epoch."}
	if b != nil {
		ok.add(bit(b.Attention == ""))
		if b.Name != "" {
			age.add(float64(b.AgeSeconds))
		}
		if b.Name != "" && b.Verified {
			last.add(float64(b.Time.Unix()))
		}
	}
	return []*family{ok, age, last}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// escapeLabel escapes a label value: backslash, double quote and newline.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes a HELP text: backslash and newline.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
