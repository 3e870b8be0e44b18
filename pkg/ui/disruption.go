package ui

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/state"
)

// classWords are the words a plan line carries for its disruption class.
var classWords = map[state.Disruption]string{
	state.DisruptionLiveApply:      "applied live",
	state.DisruptionServiceRestart: "restarts services",
	state.DisruptionReboot:         "reboots the node",
	state.DisruptionReplace:        "replaces the machine",
	state.DisruptionRemove:         "removes the node",
	state.DisruptionEtcdMembership: "changes etcd membership",
	state.DisruptionEndpointMove:   "moves the API endpoint",
}

// ClassWords is how a plan line names its change's disruption; "" for
// none. A class this build does not know is shown as it is.
func ClassWords(d state.Disruption) string {
	if d == "" || d == state.DisruptionNone {
		return ""
	}
	if w, ok := classWords[d]; ok {
		return w
	}
	return string(d)
}

// nodeClasses are the classes counted per node, most disruptive first: a
// node counts once, under the worst of its changes ("reboots", not also
// "restarts services" for the drain before the reboot).
var nodeClasses = []state.Disruption{state.DisruptionReplace, state.DisruptionRemove, state.DisruptionReboot, state.DisruptionServiceRestart, state.DisruptionLiveApply}

// DisruptionSummary returns (it does not write) the one-line account of
// what a whole run's plan disturbs, keyed by phase or plugin name, or ""
// when nothing it plans disturbs anything:
//
//	Disruption: 1 etcd member removed; 1 node removed, 2 nodes reboot.
//
// etcd membership changes and endpoint moves are counted on their own;
// every other class counts the nodes whose worst change it is. A change
// without a node counts as a target of its own.
func DisruptionSummary(changes map[string][]state.Change) string {
	t := disruptionTally{
		worst:     map[string]int{},
		etcdAdded: map[string]bool{}, etcdRemoved: map[string]bool{},
		unknown: map[state.Disruption]int{},
	}
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		for _, c := range changes[name] {
			t.add(c)
		}
	}
	parts := t.parts()
	if len(parts) == 0 {
		return ""
	}
	return "Disruption: " + strings.Join(parts, ", ") + "."
}

// disruptionTally counts what a plan disturbs, for DisruptionSummary.
type disruptionTally struct {
	worst                  map[string]int // target -> index in nodeClasses
	etcdAdded, etcdRemoved map[string]bool
	moves                  int
	unknown                map[state.Disruption]int
}

// add counts one planned change.
func (t *disruptionTally) add(c state.Change) {
	target := c.Node
	if target == "" {
		target = c.Kind + "/" + c.Name
	}
	switch d := c.Class(); d {
	case state.DisruptionEtcdMembership:
		if c.Action == state.ActionCreate {
			t.etcdAdded[target] = true
		} else {
			t.etcdRemoved[target] = true
		}
		if c.Action == state.ActionDelete && c.Node != "" {
			_ = noteWorst(t.worst, target, state.DisruptionRemove)
		}
	case state.DisruptionEndpointMove:
		t.moves++
	case state.DisruptionNone:
	default:
		if !noteWorst(t.worst, target, d) {
			t.unknown[d]++ // a newer producer's class: shown, not dropped
		}
	}
}

// parts words the tally: etcd members, the endpoint move, the nodes by
// their worst class, then the classes this build does not know.
func (t *disruptionTally) parts() []string {
	var parts []string
	if n := len(t.etcdAdded); n > 0 {
		parts = append(parts, fmt.Sprintf("%d etcd %s added", n, plural(n, "member", "members")))
	}
	if n := len(t.etcdRemoved); n > 0 {
		parts = append(parts, fmt.Sprintf("%d etcd %s removed", n, plural(n, "member", "members")))
	}
	if t.moves > 0 {
		parts = append(parts, "the Kubernetes API endpoint moves")
	}
	counts := make([]int, len(nodeClasses))
	for _, i := range t.worst {
		counts[i]++
	}
	for i, d := range nodeClasses {
		if n := counts[i]; n > 0 {
			parts = append(parts, nodeCount(d, n))
		}
	}
	for _, d := range slices.Sorted(maps.Keys(t.unknown)) {
		n := t.unknown[d]
		parts = append(parts, fmt.Sprintf("%d %s of class %s", n, plural(n, "change", "changes"), d))
	}
	return parts
}

// noteWorst keeps the worse of target's class so far and d; false when d
// is not a class counted per node.
func noteWorst(worst map[string]int, target string, d state.Disruption) bool {
	i := slices.Index(nodeClasses, d)
	if i < 0 {
		return false
	}
	if prev, ok := worst[target]; !ok || i < prev {
		worst[target] = i
	}
	return true
}

// nodeCount words n targets of class d.
func nodeCount(d state.Disruption, n int) string {
	nodes := fmt.Sprintf("%d %s", n, plural(n, "node", "nodes"))
	switch d {
	case state.DisruptionReplace:
		return fmt.Sprintf("%d %s replaced", n, plural(n, "machine", "machines"))
	case state.DisruptionRemove:
		return nodes + " removed"
	case state.DisruptionReboot:
		return nodes + " " + plural(n, "reboots", "reboot")
	case state.DisruptionServiceRestart:
		return "services restart on " + nodes
	default:
		return nodes + " configured live"
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
