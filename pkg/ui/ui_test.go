package ui_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// ansiEscape matches any CSI escape sequence.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;:]*[A-Za-z]")

// assertGolden compares got with testdata/name.golden.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Assert(t, filepath.Join("testdata", name+".golden"), []byte(got))
}

// plain returns a Printer whose output is plain text in a buffer.
func plain() (*ui.Printer, *bytes.Buffer) {
	var buf bytes.Buffer
	return ui.New(&buf, nil), &buf
}

func samplePlan() []state.Change {
	return []state.Change{
		{Action: state.ActionCreate, Kind: "openstack:network", Name: "demo", Detail: "mtu 1450"},
		{
			Action: state.ActionUpdate, Kind: "talos:machineconfig", Name: "demo-cp-01", Detail: "2 documents changed",
			Diff: "--- running\n+++ wanted\n@@ -1,3 +1,3 @@\n machine:\n-  type: worker\n+  type: controlplane\n\n cluster: {}\n",
		},
		{Action: state.ActionDelete, Kind: "openstack:port", Name: "demo-old"},
		{Action: state.ActionReplace, Kind: "proxmox:vm", Name: "demo-cp-02", Detail: "storage local-lvm -> ceph"},
		{Action: "adopt", Kind: "openstack:router", Name: "demo", Detail: "from a newer producer"},
	}
}

// classPlan has a change of every disruption class, and one of a class
// this build does not know.
func classPlan() []state.Change {
	return []state.Change{
		{Action: state.ActionCreate, Kind: "proxmox:vm", Name: "demo-worker-03", Node: "demo-worker-03", Disruption: state.DisruptionNone},
		{Action: state.ActionUpdate, Kind: "talos:machineconfig", Name: "demo-cp-01", Detail: "applies live on Talos v1.14.1", Node: "demo-cp-01", Disruption: state.DisruptionLiveApply},
		{Action: state.ActionUpdate, Kind: "kube:apiserver", Name: "demo-cp-01", Detail: "v1.36.2 -> v1.37.0", Node: "demo-cp-01", Disruption: state.DisruptionServiceRestart},
		{Action: state.ActionUpdate, Kind: "talos:machineconfig", Name: "demo-worker-01", Detail: "REBOOTS the node on Talos v1.13.8", Node: "demo-worker-01", Disruption: state.DisruptionReboot},
		{Action: state.ActionReplace, Kind: "proxmox:vm", Name: "demo-worker-02", Node: "demo-worker-02", Disruption: state.DisruptionReplace},
		{Action: state.ActionDelete, Kind: "talos:node", Name: "demo-worker-04", Node: "demo-worker-04", Disruption: state.DisruptionRemove},
		{Action: state.ActionDelete, Kind: "talos:node", Name: "demo-cp-04", Node: "demo-cp-04", Disruption: state.DisruptionEtcdMembership},
		{Action: state.ActionUpdate, Kind: "file", Name: "kubeconfig", Detail: "server 127.0.0.2 -> 127.0.0.3", Disruption: state.DisruptionEndpointMove},
		{Action: state.ActionUpdate, Kind: "future:thing", Name: "x", Disruption: "melts-down"},
	}
}

func TestLines_Golden(t *testing.T) {
	t.Parallel()
	p, buf := plain()
	p.Header("image")
	p.Info("talos %s, schematic %s", "v1.13.9", "376567988ad3")
	p.Action(false, "uploaded image %q", "talos-v1.13.9")
	p.Action(true, "would upload image %q", "talos-v1.13.9")
	p.Warn("even controlplane count (%d), etcd needs a majority", 2)
	p.Info("already ends in a newline\n")
	p.Info("100%% literal")
	assertGolden(t, "lines", buf.String())
}

func TestPlan_Golden(t *testing.T) {
	t.Parallel()
	p, buf := plain()
	p.Plan("image", nil)
	p.Plan("network", samplePlan())
	p.Plan("nodes", []state.Change{})
	p.Plan("classes", classPlan())
	assertGolden(t, "plan", buf.String())
}

func TestDisruptionSummary(t *testing.T) {
	t.Parallel()
	drain := func(node string) state.Change {
		return state.Change{Action: state.ActionUpdate, Kind: "kube:node", Name: node, Node: node, Disruption: state.DisruptionServiceRestart}
	}
	reboot := func(node string) state.Change {
		return state.Change{Action: state.ActionUpdate, Kind: "talos:node", Name: node, Node: node, Disruption: state.DisruptionReboot}
	}
	tests := []struct {
		name    string
		changes map[string][]state.Change
		want    string
	}{
		{"nothing planned", nil, ""},
		{"nothing disturbed", map[string][]state.Change{"network": {{Action: state.ActionCreate, Kind: "openstack:network"}}, "nodes": {{Action: state.ActionCreate, Kind: "proxmox:vm", Node: "w-03", Disruption: state.DisruptionNone}}}, ""},
		{"every class", map[string][]state.Change{"nodes": classPlan()}, "Disruption: 1 etcd member removed, the Kubernetes API endpoint moves, 1 machine replaced, 2 nodes removed, 1 node reboots, services restart on 1 node, 1 change of class melts-down."},
		{"a node counts once, under its worst change", map[string][]state.Change{"nodes": {drain("w-01"), reboot("w-01"), drain("w-02"), reboot("w-02"), drain("w-03")}}, "Disruption: 2 nodes reboot, services restart on 1 node."},
		{"a control plane removed is a node removed and an etcd member removed, once", map[string][]state.Change{"nodes": {
			drain("cp-04"),
			{Action: state.ActionDelete, Kind: "talos:node", Name: "cp-04", Node: "cp-04", Disruption: state.DisruptionEtcdMembership},
			{Action: state.ActionDelete, Kind: "etcd:member", Name: "cp-04", Node: "cp-04", Disruption: state.DisruptionEtcdMembership},
			{Action: state.ActionDelete, Kind: "proxmox:vm", Name: "cp-04", Node: "cp-04", Disruption: state.DisruptionRemove},
		}}, "Disruption: 1 etcd member removed, 1 node removed."},
		{"a control plane added", map[string][]state.Change{"nodes": {{Action: state.ActionCreate, Kind: "proxmox:vm", Name: "cp-04", Node: "cp-04", Disruption: state.DisruptionEtcdMembership}}}, "Disruption: 1 etcd member added."},
		{"changes without a node count on their own, across sections", map[string][]state.Change{
			"nodes":  {{Action: state.ActionUpdate, Kind: "kube:manifests", Name: "bootstrap manifests", Disruption: state.DisruptionServiceRestart}},
			"argocd": {{Action: state.ActionUpdate, Kind: "kube:application", Name: "x", Disruption: state.DisruptionServiceRestart}},
		}, "Disruption: services restart on 2 nodes."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ui.DisruptionSummary(tt.changes); got != tt.want {
				t.Errorf("DisruptionSummary() =\n %q, want\n %q", got, tt.want)
			}
		})
	}
}

func TestTable_Golden(t *testing.T) {
	t.Parallel()
	p, buf := plain()
	p.Table([]string{"NAME", "ROLE", "ADDRESS", "TALOS"}, [][]string{
		{"demo-cp-01", "controlplane", "10.0.0.11", "v1.13.9"},
		{"demo-worker-01", "worker", "10.0.0.21", "v1.13.9"},
		{"demo-worker-longer-name-02", "worker", "", "v1.13.8"},
		{"short", "worker"},
	})
	p.Table(nil, [][]string{{"a", "b"}, {"ccc", "d"}})
	p.Table(nil, nil)
	assertGolden(t, "table", buf.String())
}

func TestSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		changes map[string][]state.Change
		want    string
	}{
		{"nil", nil, "Nothing to do: the cluster matches cluster.yaml."},
		{"empty phases", map[string][]state.Change{"image": nil, "network": {}}, "Nothing to do: the cluster matches cluster.yaml."},
		{"counts across phases", map[string][]state.Change{
			"image":   {{Action: state.ActionCreate}},
			"network": {{Action: state.ActionCreate}, {Action: state.ActionUpdate}},
			"nodes":   {{Action: state.ActionCreate}},
		}, "Plan: 3 to create, 1 to update, 0 to delete."},
		{"replace shown only when present", map[string][]state.Change{
			"nodes": {{Action: state.ActionReplace}, {Action: state.ActionDelete}, {Action: state.ActionReplace}},
		}, "Plan: 0 to create, 0 to update, 1 to delete, 2 to replace."},
		{"unknown action is still something to do", map[string][]state.Change{
			"rancher": {{Action: "adopt"}},
		}, "Plan: 0 to create, 0 to update, 0 to delete."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, buf := plain()
			if got := p.Summary(tt.changes); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Summary wrote %q; it must only return the line", buf.String())
			}
		})
	}
}

// exercise calls every writing method once.
func exercise(p *ui.Printer) {
	p.Header("network")
	p.Info("info")
	p.Action(true, "create %s", "demo")
	p.Warn("careful")
	p.Plan("network", samplePlan())
	p.Table([]string{"A", "B"}, [][]string{{"1", "2"}})
}

func TestNew_Styling(t *testing.T) {
	t.Parallel()
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pipeR.Close(); _ = pipeW.Close() })

	tests := []struct {
		name    string
		pipe    bool // write to an *os.File that is not a terminal
		environ []string
		styled  bool
	}{
		{"no environment", false, nil, false},
		{"colour terminal type but a buffer", false, []string{"TERM=xterm-256color", "COLORTERM=truecolor"}, false},
		{"NO_COLOR on a buffer", false, []string{"NO_COLOR=1", "TERM=xterm-256color"}, false},
		{"NO_COLOR on a pipe", true, []string{"NO_COLOR=1", "TERM=xterm-256color"}, false},
		{"pipe is not a terminal", true, []string{"TERM=xterm-256color"}, false},
		{"CLICOLOR_FORCE on a buffer", false, []string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"}, true},
		{"CLICOLOR_FORCE without TERM", false, []string{"CLICOLOR_FORCE=1"}, true},
		{"CLICOLOR_FORCE on a pipe", true, []string{"CLICOLOR_FORCE=1"}, true},
		{"CLICOLOR_FORCE=0 does not force", false, []string{"CLICOLOR_FORCE=0", "TERM=xterm"}, false},
		{"NO_COLOR beats CLICOLOR_FORCE", false, []string{"CLICOLOR_FORCE=1", "NO_COLOR=1"}, false},
		{"empty NO_COLOR is unset", false, []string{"NO_COLOR=", "CLICOLOR_FORCE=1"}, true},
		{"last entry wins", false, []string{"NO_COLOR=1", "NO_COLOR="}, false},
		{"last entry wins, forced", false, []string{"CLICOLOR_FORCE=0", "CLICOLOR_FORCE=1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			var p *ui.Printer
			if tt.pipe {
				p = ui.New(pipeW, tt.environ)
			} else {
				p = ui.New(&buf, tt.environ)
			}
			if got := p.Styled(); got != tt.styled {
				t.Fatalf("Styled() = %v, want %v", got, tt.styled)
			}
			if tt.pipe {
				return // the pipe is shared; the escapes are checked on buffers
			}
			exercise(p)
			if has := ansiEscape.MatchString(buf.String()); has != tt.styled {
				t.Errorf("ANSI escapes present = %v, want %v; output:\n%q", has, tt.styled, buf.String())
			}
		})
	}
}

// TestStyled_SameTextAsPlain proves styling only adds escapes: stripped of
// them, forced-colour output equals plain output, table alignment included.
func TestStyled_SameTextAsPlain(t *testing.T) {
	t.Parallel()
	var styledBuf bytes.Buffer
	styled := ui.New(&styledBuf, []string{"CLICOLOR_FORCE=1", "TERM=xterm-256color"})
	p, plainBuf := plain()
	exercise(styled)
	exercise(p)
	if !strings.Contains(styledBuf.String(), "\x1b[1m") {
		t.Errorf("forced output has no bold escape:\n%q", styledBuf.String())
	}
	if diff := cmp.Diff(plainBuf.String(), ansiEscape.ReplaceAllString(styledBuf.String(), "")); diff != "" {
		t.Errorf("styled text differs from plain (-plain +stripped):\n%s", diff)
	}
}

func TestPrinter_ConcurrentLinesDoNotInterleave(t *testing.T) {
	t.Parallel()
	p, buf := plain()
	const goroutines, lines = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				p.Info("goroutine %d line %d %s", g, i, strings.Repeat("x", 40))
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("got %d lines, want %d", len(got), goroutines*lines)
	}
	for _, line := range got {
		var g, i int
		var xs string
		if n, err := fmt.Sscanf(line, "goroutine %d line %d %s", &g, &i, &xs); n != 3 || err != nil || len(xs) != 40 {
			t.Fatalf("interleaved line %q", line)
		}
	}
}
