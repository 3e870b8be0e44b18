// Package state is the versioned JSON document that talosc phases and plugins
// exchange on stdin and stdout during one run. It imports only the standard
// library, so out-of-tree plugins can depend on it cheaply.
//
// Rules of the contract:
//   - one document per invocation, newline-terminated, and nothing else on stdout;
//   - every phase or plugin owns exactly one section (keyed by its name) and
//     copies every other section through untouched, including ones it does not
//     know;
//   - a phase that fails still writes its partial section (Status "failed") and
//     exits 1;
//   - in a dry run sections are "planned": Plan lists the changes and Unknown the
//     outputs that are only known after a real converge, so
//     "tc-nodes validate --dry-run | tc-image plan | tc-net plan | tc-nodes
//     plan" is a whole-cluster plan.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// APIVersion is the version of the document this package reads and writes.
// Bump it for any change a consumer must handle.
const APIVersion = "talosc.dev/v1alpha1"

// Kind is the document kind.
const Kind = "ClusterState"

// Status is the outcome recorded in a section.
type Status string

// Section statuses.
const (
	// StatusPlanned means a dry run: Plan is what converge would do.
	StatusPlanned Status = "planned"
	// StatusSucceeded means the hook or phase completed.
	StatusSucceeded Status = "succeeded"
	// StatusFailed means it failed; Error says why and Outputs holds what was done.
	StatusFailed Status = "failed"
	// StatusDeferred means the work needs something not there yet (for
	// example a kubeconfig before the cluster is bootstrapped). Not a failure.
	StatusDeferred Status = "deferred"
	// StatusSkipped means the producer did nothing, for example because an
	// earlier phase failed or the plugin is not configured.
	StatusSkipped Status = "skipped"
)

// Action is what a planned change does to a resource.
type Action string

// Change actions.
const (
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update"
	ActionDelete  Action = "delete"
	ActionReplace Action = "replace"
)

// Disruption is what a change does to the running cluster, decided by its
// producer from what it knows (the node's running Talos version, the
// provider, the action). Empty is "none" (older producers set nothing).
type Disruption string

// Disruption classes, from harmless to most disruptive.
const (
	// DisruptionNone disturbs nothing that runs (a new resource, a tag).
	DisruptionNone Disruption = "none"
	// DisruptionLiveApply changes a node's configuration in place, with no
	// restart of the node.
	DisruptionLiveApply Disruption = "live-apply"
	// DisruptionServiceRestart restarts a service or a component's pods
	// on a node (a static pod, the kubelet), or drains the node.
	DisruptionServiceRestart Disruption = "service-restart"
	// DisruptionReboot reboots a node.
	DisruptionReboot Disruption = "reboot"
	// DisruptionReplace replaces a machine with a new one.
	DisruptionReplace Disruption = "replace"
	// DisruptionRemove removes a machine from the cluster.
	DisruptionRemove Disruption = "remove"
	// DisruptionEtcdMembership adds or removes an etcd member.
	DisruptionEtcdMembership Disruption = "etcd-membership"
	// DisruptionEndpointMove moves the Kubernetes API endpoint.
	DisruptionEndpointMove Disruption = "endpoint-move"
)

// Disruptions lists every class in the order plans summarize them.
var Disruptions = []Disruption{DisruptionEtcdMembership, DisruptionEndpointMove, DisruptionReplace, DisruptionRemove, DisruptionReboot, DisruptionServiceRestart, DisruptionLiveApply, DisruptionNone}

// Change is one planned or performed change to one resource.
type Change struct {
	Action Action `json:"action"`
	// Kind is the resource kind, e.g. "openstack:network" or "talos:machineconfig".
	Kind string `json:"kind"`
	// Name identifies the resource within its kind.
	Name string `json:"name"`
	// Detail is a short human explanation ("mtu 1450 -> 1500").
	Detail string `json:"detail,omitempty"`
	// Diff is a redacted unified diff, for machine configurations.
	Diff string `json:"diff,omitempty"`
	// Disruption is what the change does to the running cluster; empty
	// means none.
	Disruption Disruption `json:"disruption,omitempty" jsonschema:"enum=none,enum=live-apply,enum=service-restart,enum=reboot,enum=replace,enum=remove,enum=etcd-membership,enum=endpoint-move"`
	// Node is the cluster node (hostname) the change touches, if any.
	Node string `json:"node,omitempty"`
}

// Class is c's disruption, none when its producer set none.
func (c Change) Class() Disruption {
	if c.Disruption == "" {
		return DisruptionNone
	}
	return c.Disruption
}

// Error is the failure recorded in a section.
type Error struct {
	Message string `json:"message"`
	// Problems lists individual findings, e.g. one per invalid key.
	Problems []string `json:"problems,omitempty"`
	// Confirm, when set, is the question a human must answer yes to
	// before the phase may go on ("scale down will remove 1 node(s):
	// demo-worker-03"): nothing was changed; the front door asks it and
	// runs again with --yes.
	Confirm string `json:"confirm,omitempty"`
	// Confirming names what a yes to Confirm confirms (the nodes a
	// scale-down removes); the front door passes exactly these back.
	Confirming []string `json:"confirming,omitempty"`
}

// Section is what one phase or plugin recorded.
type Section struct {
	Status   Status `json:"status"`
	Producer string `json:"producer"`
	// Plan lists the changes made (or, when planned, that would be made).
	Plan []Change `json:"plan,omitempty"`
	// Outputs are owned and typed by the producer.
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// Unknown names outputs that are known only after a real converge.
	Unknown []string `json:"unknown,omitempty"`
	// Messages are notes for humans that belong with the result.
	Messages []string `json:"messages,omitempty"`
	Error    *Error   `json:"error,omitempty"`
}

// Document is the envelope that flows through a run.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster is the name from cluster.yaml.
	Cluster string `json:"cluster"`
	// Action is the command the run performs: plan, converge, status, check or destroy.
	Action string `json:"action,omitempty"`
	// Sections are keyed by phase or plugin name and kept raw, so sections
	// written by other (newer or older) producers pass through untouched.
	Sections map[string]json.RawMessage `json:"sections"`
	// Order lists section names in the order they were written.
	Order []string `json:"order,omitempty"`
}

// New returns an empty document for cluster and action.
func New(cluster, action string) *Document {
	return &Document{APIVersion: APIVersion, Kind: Kind, Cluster: cluster, Action: action, Sections: map[string]json.RawMessage{}}
}

// VersionError reports a document of an apiVersion or kind this build does not read.
type VersionError struct{ APIVersion, Kind string }

func (e *VersionError) Error() string {
	return fmt.Sprintf("state document has apiVersion %q kind %q; this build reads apiVersion %q kind %q", e.APIVersion, e.Kind, APIVersion, Kind)
}

// Read decodes one document from r. Empty input yields (nil, nil) so that a
// phase at the head of a pipe starts a new document.
func Read(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return Parse(data)
}

// Parse decodes one document. Empty (or all-whitespace) input yields (nil, nil).
func Parse(data []byte) (*Document, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil //nolint:nilnil // no document is a valid, distinct answer
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("state on stdin is not a talosc state document: %w", err)
	}
	if dec.More() {
		return nil, errors.New("state on stdin holds more than one JSON document")
	}
	if d.APIVersion != APIVersion || d.Kind != Kind {
		return nil, &VersionError{APIVersion: d.APIVersion, Kind: d.Kind}
	}
	if d.Sections == nil {
		d.Sections = map[string]json.RawMessage{}
	}
	return &d, nil
}

// Write encodes d to w as one newline-terminated JSON document.
func Write(w io.Writer, d *Document) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	data = append(data, '\n')
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// Section decodes the section called name. ok is false when it is absent.
func (d *Document) Section(name string) (s Section, ok bool, err error) {
	raw, ok := d.Sections[name]
	if !ok {
		return Section{}, false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Section{}, true, fmt.Errorf("state section %q: %w", name, err)
	}
	return s, true, nil
}

// Put stores s as the section called name, replacing any earlier one.
func (d *Document) Put(name string, s Section) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state section %q: %w", name, err)
	}
	if d.Sections == nil {
		d.Sections = map[string]json.RawMessage{}
	}
	d.Sections[name] = raw
	d.Order = append(slices.DeleteFunc(d.Order, func(n string) bool { return n == name }), name)
	return nil
}

// Outputs decodes the outputs of section name into T.
func Outputs[T any](d *Document, name string) (T, bool, error) {
	var out T
	s, ok, err := d.Section(name)
	if err != nil || !ok || len(s.Outputs) == 0 {
		return out, ok, err
	}
	if err := json.Unmarshal(s.Outputs, &out); err != nil {
		return out, true, fmt.Errorf("state section %q outputs: %w", name, err)
	}
	return out, true, nil
}

// SetOutputs encodes v into s.Outputs.
func (s *Section) SetOutputs(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode outputs: %w", err)
	}
	s.Outputs = raw
	return nil
}

// Fail marks s failed with err.
func (s *Section) Fail(err error) {
	s.Status = StatusFailed
	s.Error = &Error{Message: err.Error()}
}

// Failed returns the names of sections whose status is failed, in write order
// (sections missing from Order come last, sorted).
func (d *Document) Failed() []string {
	var out []string
	for _, name := range d.Names() {
		if s, _, err := d.Section(name); err == nil && s.Status == StatusFailed {
			out = append(out, name)
		}
	}
	return out
}

// Names lists every section name: first in write order, then the rest sorted.
func (d *Document) Names() []string {
	names := make([]string, 0, len(d.Sections))
	for _, n := range d.Order {
		if _, ok := d.Sections[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range d.Sections {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// ChangedOtherThan reports the sections of after that differ from before,
// ignoring section own. Plugins may write only their own section; the front
// door uses this to refuse a plugin that tampered with another.
func ChangedOtherThan(before, after *Document, own string) []string {
	var changed []string
	for name, raw := range after.Sections {
		if name == own {
			continue
		}
		if prev, ok := before.Sections[name]; !ok || !jsonEqual(prev, raw) {
			changed = append(changed, name)
		}
	}
	for name := range before.Sections {
		if _, ok := after.Sections[name]; !ok && name != own {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

func jsonEqual(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
