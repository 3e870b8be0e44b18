// Package report is the check report as a document: what a phase's check
// puts in its section (Findings) and what `kubectl talosc check -o json`
// prints (CheckReport, published as schema/check.schema.json), and the
// same findings as Prometheus metrics for node-exporter's textfile
// collector (WriteMetrics, WriteTextfile). It imports only the state
// contract, atomicfile and the standard library, so plugins and the
// schema generator can use it.
package report

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/state"
)

// KindCheck is the check report's kind; its apiVersion is state.APIVersion.
const KindCheck = "CheckReport"

// Findings is one phase's check report: its section's outputs in the check
// document. OK false makes check exit 1.
type Findings struct {
	OK bool `json:"ok"`
	// Items are the findings as lines for humans, in a stable order.
	Items []Item `json:"items,omitempty"`
	// Incomplete lists why the check could not look at everything.
	Incomplete []string `json:"incomplete,omitempty"`
	// Components are the pinned components against their releases.
	Components []Component `json:"components,omitempty"`
	// Nodes are the running Kubernetes nodes.
	Nodes []Node `json:"nodes,omitempty"`
	// Certificates are the client certificates and cluster CAs.
	Certificates []Certificate `json:"certificates,omitempty"`
	// Orphans is the orphan search; nil when the phase does not look.
	Orphans *OrphanCheck `json:"orphans,omitempty"`
	// Pending is how many actions converge would take (the front door's
	// plan section); nil when nothing planned.
	Pending *int `json:"pending,omitempty"`
	// Backup is the newest backup against backup.max_age; nil when
	// cluster.yaml configures no backup.
	Backup *BackupCheck `json:"backup,omitempty"`
	// Etcd is etcd's hygiene; nil when the phase does not look.
	Etcd *EtcdCheck `json:"etcd,omitempty"`
}

// Item is one line of a check report.
type Item struct {
	Name       string `json:"name"`
	Configured string `json:"configured,omitempty"`
	Observed   string `json:"observed,omitempty"`
	Attention  string `json:"attention,omitempty"`
	// Fix is what fixes what needs attention (a command, an edit).
	Fix string `json:"fix,omitempty"`
}

// Component is a pinned component (talos, kubernetes) against its
// releases; it is reported only when the releases were read.
type Component struct {
	Component  string `json:"component"`
	Configured string `json:"configured"`
	// LatestPatch is the newest release of the pinned minor.
	LatestPatch string `json:"latestPatch"`
	// Latest is the newest release overall.
	Latest         string `json:"latest"`
	PatchAvailable bool   `json:"patchAvailable"`
	MinorAvailable bool   `json:"minorAvailable"`
	// UpToDate is true when neither a patch nor a minor is available.
	UpToDate bool `json:"upToDate"`
}

// Node is one Kubernetes node as check saw it.
type Node struct {
	Name       string `json:"name"`
	Talos      string `json:"talos"`
	Kubernetes string `json:"kubernetes"`
	// Drift is true when the node runs other versions than pinned.
	Drift    bool `json:"drift"`
	Cordoned bool `json:"cordoned"`
	Ready    bool `json:"ready"`
}

// Certificate is one certificate's expiry. Only public facts: never a key.
type Certificate struct {
	// Name says which certificate: talosconfig, kubeconfig, talos-ca,
	// kubernetes-ca, etcd-ca, aggregator-ca.
	Name string `json:"name"`
	// File is the file it was read from, relative to the cluster directory.
	File    string `json:"file"`
	Subject string `json:"subject"`
	// NotAfter is when it expires (RFC 3339, UTC).
	NotAfter time.Time `json:"notAfter"`
	// DaysLeft is the whole days until NotAfter (negative once expired).
	DaysLeft int `json:"daysLeft"`
	// Attention is set when it expires within the warning period.
	Attention string `json:"attention,omitempty"`
	// Renew is how to renew it.
	Renew string `json:"renew"`
}

// OrphanCheck is the search for owned resources no desired machine
// explains. Done false means nobody looked (Reason says why): that is
// never "none found".
type OrphanCheck struct {
	Done   bool     `json:"done"`
	Reason string   `json:"reason,omitempty"`
	Found  []Orphan `json:"found"`
}

// Orphan is one owned resource no desired machine explains.
type Orphan struct {
	// Kind is the provider resource: server (OpenStack), vm (Proxmox).
	Kind     string `json:"kind"`
	Hostname string `json:"hostname"`
	// ID is the provider id (Nova server id, Proxmox VMID).
	ID     string `json:"id"`
	Status string `json:"status,omitempty"`
}

// BackupCheck is the newest backup of the cluster as check found it in
// the backup target, from its record (no age identity is needed).
type BackupCheck struct {
	// Target is where backups are kept (a directory).
	Target string `json:"target"`
	// Name is the newest bundle's name; empty when there is none.
	Name string `json:"name,omitempty"`
	// Time is when it was taken (UTC).
	Time time.Time `json:"time,omitzero"`
	// AgeSeconds is how old it was at the check.
	AgeSeconds int64 `json:"ageSeconds,omitempty"`
	// MaxAgeSeconds is backup.max_age.
	MaxAgeSeconds int64 `json:"maxAgeSeconds"`
	// Revision and Keys are the snapshot's etcd revision and key count.
	Revision int64 `json:"revision,omitempty"`
	Keys     int64 `json:"keys,omitempty"`
	// Verified is true when the stored bundle matches its record (size
	// and sha256, read again by the check).
	Verified bool `json:"verified"`
	// Attention says what is wrong (missing, too old, not verified).
	Attention string `json:"attention,omitempty"`
}

// Summary says in a line which backup is the newest, how old, and
// whether its stored bundle matched its record.
func (b *BackupCheck) Summary() string {
	if b.Name == "" {
		return "none"
	}
	verified := "verified"
	if !b.Verified {
		verified = "NOT verified"
	}
	return fmt.Sprintf("%s, %s old, etcd revision %d, %d keys, %s", b.Name, time.Duration(b.AgeSeconds)*time.Second, b.Revision, b.Keys, verified)
}

// CheckReport is what `kubectl talosc check -o json|yaml` prints.
type CheckReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Cluster    string `json:"cluster"`
	Provider   string `json:"provider"`
	// CheckedAt is when the check ran (UTC).
	CheckedAt time.Time `json:"checkedAt"`
	// OK is true only when everything is up to date and the check was
	// complete; check exits 0 exactly then.
	OK bool `json:"ok"`
	// Incomplete are why the check could not look at everything.
	Incomplete   []Reason      `json:"incomplete,omitempty"`
	Components   []Component   `json:"components,omitempty"`
	Nodes        []Node        `json:"nodes,omitempty"`
	Plugins      []Plugin      `json:"plugins,omitempty"`
	Certificates []Certificate `json:"certificates,omitempty"`
	// Orphans is the nodes phase's orphan search; nil when it did not run.
	Orphans *OrphanCheck `json:"orphans,omitempty"`
	// Pending is how many actions converge would take; nil when check did
	// not plan (it plans only when the provider credentials load).
	Pending *int `json:"pending,omitempty"`
	// Backup is the newest backup; nil when no backup is configured.
	Backup *BackupCheck `json:"backup,omitempty"`
	// Etcd is the nodes phase's etcd hygiene; nil when it did not run.
	Etcd *EtcdCheck `json:"etcd,omitempty"`
	// Sections are every phase's and plugin's report as it wrote it.
	Sections map[string]Section `json:"sections"`
	// Order is the sections' run order.
	Order []string `json:"order"`
}

// Reason is one reason a check is incomplete.
type Reason struct {
	Section string `json:"section"`
	Reason  string `json:"reason"`
}

// Plugin is one plugin's check verdict.
type Plugin struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
}

// Section is one phase's or plugin's part of a report.
type Section struct {
	Status   state.Status    `json:"status"`
	Report   json.RawMessage `json:"report,omitempty"`
	Messages []string        `json:"messages,omitempty"`
	Error    string          `json:"error,omitempty"`
}
