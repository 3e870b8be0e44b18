// Package planfile is the plan as a document: what `plan -o json` prints
// and `plan --out FILE` saves, and what `converge --plan FILE` applies.
// It carries every planned action with its disruption class and the node
// it touches, redacted as the human plan is (it is made from the same
// state document), and a fingerprint of what the plan was made from: the
// files of the cluster directory it read and a digest of what each phase
// observed. It holds no secret values: files are named with their
// SHA-256, never copied.
package planfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/atomicfile"
	"github.com/talosc/talosc/pkg/state"
)

// Kind is the document kind; its apiVersion is state.APIVersion.
const Kind = "Plan"

// Document is a whole run's plan.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster is the name from cluster.yaml.
	Cluster string `json:"cluster"`
	// CreatedAt is when the plan was made (UTC).
	CreatedAt time.Time `json:"createdAt"`
	// Complete is false when some phase or plugin could not look
	// (failed, deferred, skipped): Incomplete says which.
	Complete   bool     `json:"complete"`
	Incomplete []string `json:"incomplete,omitempty"`
	Summary    Summary  `json:"summary"`
	// Actions are every planned change, in run order.
	Actions []Action `json:"actions"`
	// Sections are the phases and plugins that planned, in run order.
	Sections    []Section   `json:"sections"`
	Fingerprint Fingerprint `json:"fingerprint"`
}

// Action is one planned change.
type Action struct {
	// Section is the phase or plugin that plans it.
	Section string       `json:"section"`
	Action  state.Action `json:"action"`
	Kind    string       `json:"kind"`
	Name    string       `json:"name"`
	Detail  string       `json:"detail,omitempty"`
	// Diff is the redacted configuration diff, when there is one.
	Diff       string           `json:"diff,omitempty"`
	Disruption state.Disruption `json:"disruption" jsonschema:"enum=none,enum=live-apply,enum=service-restart,enum=reboot,enum=replace,enum=remove,enum=etcd-membership,enum=endpoint-move"`
	// Node is the cluster node the action touches, if any.
	Node string `json:"node,omitempty"`
}

// Summary counts the actions.
type Summary struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Delete  int `json:"delete"`
	Replace int `json:"replace"`
	// Disruption counts the actions of each class.
	Disruption map[state.Disruption]int `json:"disruption"`
}

// Section is one phase's or plugin's part of the run.
type Section struct {
	Name     string       `json:"name"`
	Status   state.Status `json:"status"`
	Messages []string     `json:"messages,omitempty"`
	Error    string       `json:"error,omitempty"`
}

// Fingerprint identifies what a plan was made from.
type Fingerprint struct {
	// Files maps each file of the cluster directory the plan read
	// (cluster.yaml, its includes, talossecrets.yaml) to its SHA-256.
	Files map[string]string `json:"files"`
	// Observed maps a section to the digest of what its plan observed
	// (the owned machines, the nodes' versions), when it reports one.
	Observed map[string]string `json:"observed,omitempty"`
}

// FromState makes the plan document of a planned state document.
func FromState(doc *state.Document, files map[string]string, now time.Time) (Document, error) {
	d := Document{
		APIVersion: state.APIVersion, Kind: Kind, Cluster: doc.Cluster, CreatedAt: now.UTC().Truncate(time.Second),
		Complete: true, Actions: []Action{}, Sections: []Section{},
		Summary:     Summary{Disruption: map[state.Disruption]int{}},
		Fingerprint: Fingerprint{Files: files, Observed: map[string]string{}},
	}
	for _, name := range doc.Names() {
		sec, _, err := doc.Section(name)
		if err != nil {
			return Document{}, err
		}
		s := Section{Name: name, Status: sec.Status, Messages: sec.Messages}
		if sec.Error != nil {
			s.Error = sec.Error.Message
		}
		d.Sections = append(d.Sections, s)
		if sec.Status != state.StatusPlanned && sec.Status != state.StatusSucceeded {
			d.Complete = false
			d.Incomplete = append(d.Incomplete, fmt.Sprintf("%s %s", name, sec.Status))
		}
		if o := observed(sec); o != "" {
			d.Fingerprint.Observed[name] = o
		}
		for _, c := range sec.Plan {
			d.Actions = append(d.Actions, Action{Section: name, Action: c.Action, Kind: c.Kind, Name: c.Name, Detail: c.Detail, Diff: c.Diff, Disruption: c.Class(), Node: c.Node})
			d.Summary.count(c)
		}
	}
	return d, nil
}

func (s *Summary) count(c state.Change) {
	switch c.Action {
	case state.ActionCreate:
		s.Create++
	case state.ActionUpdate:
		s.Update++
	case state.ActionDelete:
		s.Delete++
	case state.ActionReplace:
		s.Replace++
	default: // a newer producer's action: listed, not summed
	}
	s.Disruption[c.Class()]++
}

// observed is the "observed" digest a section's outputs carry, "" if none.
func observed(sec state.Section) string {
	var v struct {
		Observed string `json:"observed"`
	}
	if len(sec.Outputs) == 0 || json.Unmarshal(sec.Outputs, &v) != nil {
		return ""
	}
	return v.Observed
}

// HashFiles hashes the files a plan reads in dir: names (relative to
// dir), plus extra ones that may be missing (talossecrets.yaml before the
// first converge). A listed file that cannot be read fails.
func HashFiles(dir string, names []string, optional ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range slices.Concat(names, optional) {
		data, err := os.ReadFile(filepath.Join(dir, n))
		switch {
		case errors.Is(err, fs.ErrNotExist) && slices.Contains(optional, n):
			out[n] = "absent"
			continue
		case err != nil:
			return nil, fmt.Errorf("fingerprint of %s: %w", n, err)
		}
		sum := sha256.Sum256(data)
		out[n] = hex.EncodeToString(sum[:])
	}
	return out, nil
}

// Read loads a saved plan.
func Read(path string) (Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Document{}, fmt.Errorf("read the saved plan: %w", err)
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		return Document{}, fmt.Errorf("%s is not a saved plan: %w", path, err)
	}
	if d.APIVersion != state.APIVersion || d.Kind != Kind {
		return Document{}, fmt.Errorf("%s has apiVersion %q kind %q; this build applies apiVersion %q kind %q (make the plan again with this build)", path, d.APIVersion, d.Kind, state.APIVersion, Kind)
	}
	return d, nil
}

// Write saves d to path atomically, 0644: it holds no secret, and a
// reviewer reads it.
func Write(path string, d Document) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the plan: %w", err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), atomicfile.Options{Mode: 0o644, Replace: true}); err != nil {
		return fmt.Errorf("save the plan: %w", err)
	}
	return nil
}

// Stale says why fresh, a plan made now from the same directory, no
// longer matches saved: the files changed, what a phase observed changed,
// or the actions differ. Empty means saved still holds.
func Stale(saved, fresh Document) []string {
	var why []string
	for _, n := range slices.Sorted(maps.Keys(union(saved.Fingerprint.Files, fresh.Fingerprint.Files))) {
		if saved.Fingerprint.Files[n] != fresh.Fingerprint.Files[n] {
			why = append(why, fmt.Sprintf("%s changed since the plan was made", n))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(union(saved.Fingerprint.Observed, fresh.Fingerprint.Observed))) {
		if saved.Fingerprint.Observed[n] != fresh.Fingerprint.Observed[n] {
			why = append(why, fmt.Sprintf("what the %s phase observes (owned machines, running versions, node states) changed since the plan was made", n))
		}
	}
	if saved.Cluster != fresh.Cluster {
		why = append(why, fmt.Sprintf("the plan is of cluster %q, this directory's is %q", saved.Cluster, fresh.Cluster))
	}
	if !saved.Complete {
		why = append(why, "the saved plan is incomplete ("+joinOr(saved.Incomplete)+"): it cannot be applied exactly")
	}
	extra, missing := diffActions(saved.Actions, fresh.Actions, fullKey)
	why = append(why, worded("the cluster now needs an action the plan lacks: ", extra)...)
	return append(why, worded("the plan has an action the cluster no longer needs: ", missing)...)
}

// Performed says how the actions a converge performed (done, made from its
// final state document) differ from the saved plan it applied, by what
// each changed (section, action, kind and name: a real run's details say
// more than a plan's, "endpoint 10.0.0.5" for "once its address is
// allocated"). Every planned action must be done; an action done on a
// node the plan works on is that work's own last step (a new VM's boot
// ISO removed once it booted, which a plan cannot see); anything else
// done is not the plan. Empty means exactly the plan was done.
func Performed(saved, done Document) []string {
	planned := map[string]bool{}
	for _, a := range saved.Actions {
		if a.Node != "" {
			planned[a.Node] = true
		}
	}
	var counted []Action
	for _, a := range done.Actions {
		inPlan := slices.ContainsFunc(saved.Actions, func(p Action) bool { return shortKey(p) == shortKey(a) })
		if inPlan || !planned[a.Node] {
			counted = append(counted, a)
		}
	}
	extra, missing := diffActions(saved.Actions, counted, shortKey)
	return append(worded("done but not in the plan: ", extra), worded("in the plan but not done: ", missing)...)
}

func fullKey(a Action) string {
	return fmt.Sprintf("%s (%s) [%s]", shortKey(a), a.Detail, a.Disruption)
}

func shortKey(a Action) string {
	return fmt.Sprintf("%s: %s %s/%s", a.Section, a.Action, a.Kind, a.Name)
}

// diffActions lists the actions only fresh has (extra) and only saved has
// (missing), as key words them; an action under the same key whose
// configuration diff differs counts as both.
func diffActions(saved, fresh []Action, key func(Action) string) (extra, missing []string) {
	left := map[string][]string{} // key -> the saved actions' diffs not yet matched
	for _, a := range saved {
		left[key(a)] = append(left[key(a)], a.Diff)
	}
	for _, a := range fresh {
		k := key(a)
		if i := slices.Index(left[k], a.Diff); i >= 0 {
			left[k] = slices.Delete(left[k], i, i+1)
			continue
		}
		extra = append(extra, k)
	}
	for _, a := range saved {
		k := key(a)
		if i := slices.Index(left[k], a.Diff); i >= 0 {
			left[k] = slices.Delete(left[k], i, i+1)
			missing = append(missing, k)
		}
	}
	return extra, missing
}

// worded prefixes each of keys with what it means.
func worded(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "no reason recorded"
	}
	return fmt.Sprint(s)
}
