package planfile_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/state"
)

var made = time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)

// planned is a planned run with a change of every action and class, a
// section that observed something and a deferred plugin.
func planned(t *testing.T) *state.Document {
	t.Helper()
	doc := state.New("demo", "plan")
	put := func(name string, sec state.Section) {
		if err := doc.Put(name, sec); err != nil {
			t.Fatal(err)
		}
	}
	put("image", state.Section{Status: state.StatusPlanned, Producer: "tc-image"})
	put("net", state.Section{Status: state.StatusPlanned, Producer: "tc-net", Plan: []state.Change{
		{Action: state.ActionCreate, Kind: "proxmox:sdn-subnet", Name: "demo", Detail: "127.20.0.0/24"},
	}})
	nodes := state.Section{Status: state.StatusPlanned, Producer: "tc-nodes", Plan: []state.Change{
		{Action: state.ActionCreate, Kind: "proxmox:vm", Name: "demo-worker-03", Node: "demo-worker-03", Disruption: state.DisruptionNone},
		{Action: state.ActionUpdate, Kind: "talos:machineconfig", Name: "demo-worker-01", Detail: "applies live on Talos v1.14.1", Diff: "--- running\n+++ wanted\n-  a: 1\n+  a: 2\n", Node: "demo-worker-01", Disruption: state.DisruptionLiveApply},
		{Action: state.ActionUpdate, Kind: "talos:machineconfig", Name: "demo-worker-02", Detail: "REBOOTS the node on Talos v1.13.8", Node: "demo-worker-02", Disruption: state.DisruptionReboot},
		{Action: state.ActionUpdate, Kind: "kube:apiserver", Name: "demo-cp-01", Node: "demo-cp-01", Disruption: state.DisruptionServiceRestart},
		{Action: state.ActionReplace, Kind: "proxmox:vm", Name: "demo-worker-04", Node: "demo-worker-04", Disruption: state.DisruptionReplace},
		{Action: state.ActionDelete, Kind: "talos:node", Name: "demo-worker-05", Node: "demo-worker-05", Disruption: state.DisruptionRemove},
		{Action: state.ActionDelete, Kind: "talos:node", Name: "demo-cp-04", Node: "demo-cp-04", Disruption: state.DisruptionEtcdMembership},
		{Action: state.ActionUpdate, Kind: "file", Name: "kubeconfig", Detail: "server 127.0.0.2 -> 127.0.0.3", Disruption: state.DisruptionEndpointMove},
		{Action: state.ActionCreate, Kind: "talos:bootstrap", Name: "demo-cp-01"}, // an older producer: no class
	}}
	if err := nodes.SetOutputs(map[string]any{"observed": "abc123", "machines": []string{}}); err != nil {
		t.Fatal(err)
	}
	put("nodes", nodes)
	put("argocd", state.Section{Status: state.StatusDeferred, Producer: "tc-argocd", Messages: []string{"no kubeconfig yet"}})
	return doc
}

func files() map[string]string {
	return map[string]string{"cluster.yaml": "11", "secrets.yaml": "22", "talossecrets.yaml": "absent"}
}

func TestFromState_Golden(t *testing.T) {
	t.Parallel()
	d, err := planfile.FromState(planned(t), files(), made)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Assert(t, filepath.Join("testdata", "plan.json"), append(data, '\n'))
	if d.Complete || !slices.Equal(d.Incomplete, []string{"argocd deferred"}) {
		t.Errorf("complete %t %v, want incomplete by the deferred argocd", d.Complete, d.Incomplete)
	}
	if got := d.Actions[len(d.Actions)-1].Disruption; got != state.DisruptionNone {
		t.Errorf("an action with no class = %q, want none", got)
	}
}

func TestWriteRead_RoundTrip(t *testing.T) {
	t.Parallel()
	d, err := planfile.FromState(planned(t), files(), made)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.plan")
	if err := planfile.Write(path, d); err != nil {
		t.Fatal(err)
	}
	got, err := planfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if why := planfile.Stale(got, d); len(why) != 1 || !strings.Contains(why[0], "incomplete") {
		t.Errorf("a plan read back differs from the one written (beyond being incomplete): %v", why)
	}
	if err := os.WriteFile(path, []byte(`{"apiVersion":"talosc.dev/v9","kind":"Plan"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := planfile.Read(path); err == nil || !strings.Contains(err.Error(), "make the plan again") {
		t.Errorf("a plan of another apiVersion = %v, want refused", err)
	}
}

func TestHashFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("name: demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := planfile.HashFiles(dir, []string{"cluster.yaml"}, "talossecrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got["cluster.yaml"] != sha("name: demo\n") || len(got["cluster.yaml"]) != 64 || got["talossecrets.yaml"] != "absent" {
		t.Errorf("HashFiles = %v", got)
	}
	if _, err := planfile.HashFiles(dir, []string{"secrets.yaml"}); err == nil {
		t.Errorf("a missing included file was hashed; want an error")
	}
}

func TestStale(t *testing.T) {
	t.Parallel()
	base := func(t *testing.T) planfile.Document {
		t.Helper()
		doc := planned(t)
		if err := doc.Put("argocd", state.Section{Status: state.StatusPlanned}); err != nil {
			t.Fatal(err)
		}
		d, err := planfile.FromState(doc, files(), made)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name   string
		change func(saved, fresh *planfile.Document)
		want   []string
	}{
		{"the same plan holds", func(_, _ *planfile.Document) {}, nil},
		{"made at another time still holds", func(_, fresh *planfile.Document) { fresh.CreatedAt = made.Add(time.Hour) }, nil},
		{"cluster.yaml edited", func(_, fresh *planfile.Document) { fresh.Fingerprint.Files["cluster.yaml"] = "33" }, []string{"cluster.yaml changed since the plan was made"}},
		{"talossecrets.yaml appeared", func(_, fresh *planfile.Document) { fresh.Fingerprint.Files["talossecrets.yaml"] = "44" }, []string{"talossecrets.yaml changed since the plan was made"}},
		{"an include added", func(_, fresh *planfile.Document) { fresh.Fingerprint.Files["extra.yaml"] = "55" }, []string{"extra.yaml changed since the plan was made"}},
		{"the cluster changed under the same actions", func(_, fresh *planfile.Document) { fresh.Fingerprint.Observed["nodes"] = "def456" }, []string{"what the nodes phase observes (owned machines, running versions, node states) changed since the plan was made"}},
		{"another cluster", func(_, fresh *planfile.Document) { fresh.Cluster = "prod" }, []string{`the plan is of cluster "demo", this directory's is "prod"`}},
		{"an incomplete saved plan", func(saved, _ *planfile.Document) {
			saved.Complete, saved.Incomplete = false, []string{"argocd deferred"}
		}, []string{"the saved plan is incomplete ([argocd deferred]): it cannot be applied exactly"}},
		{"an action now needed", func(_, fresh *planfile.Document) {
			fresh.Actions = append(fresh.Actions, planfile.Action{Section: "nodes", Action: state.ActionDelete, Kind: "proxmox:vm", Name: "demo-worker-06", Disruption: state.DisruptionRemove})
		}, []string{"the cluster now needs an action the plan lacks: nodes: delete proxmox:vm/demo-worker-06 () [remove]"}},
		{"an action no longer needed", func(_, fresh *planfile.Document) { fresh.Actions = fresh.Actions[1:] }, []string{"the plan has an action the cluster no longer needs: net: create proxmox:sdn-subnet/demo (127.20.0.0/24) [none]"}},
		{"the same apply now reboots", func(_, fresh *planfile.Document) { fresh.Actions[2].Disruption = state.DisruptionReboot }, []string{
			"the cluster now needs an action the plan lacks: nodes: update talos:machineconfig/demo-worker-01 (applies live on Talos v1.14.1) [reboot]",
			"the plan has an action the cluster no longer needs: nodes: update talos:machineconfig/demo-worker-01 (applies live on Talos v1.14.1) [live-apply]",
		}},
		{"another configuration diff", func(_, fresh *planfile.Document) { fresh.Actions[2].Diff = "+  a: 3\n" }, []string{
			"the cluster now needs an action the plan lacks: nodes: update talos:machineconfig/demo-worker-01 (applies live on Talos v1.14.1) [live-apply]",
			"the plan has an action the cluster no longer needs: nodes: update talos:machineconfig/demo-worker-01 (applies live on Talos v1.14.1) [live-apply]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			saved, fresh := base(t), base(t)
			tt.change(&saved, &fresh)
			if got := planfile.Stale(saved, fresh); !slices.Equal(got, tt.want) {
				t.Errorf("Stale() =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestPerformed(t *testing.T) {
	t.Parallel()
	saved, err := planfile.FromState(planned(t), files(), made)
	if err != nil {
		t.Fatal(err)
	}
	done := saved
	done.Actions = slices.Clone(saved.Actions)
	done.Actions[0].Detail = "127.20.0.0/24, gateway 127.20.0.1" // a real run says more
	if why := planfile.Performed(saved, done); len(why) != 0 {
		t.Errorf("the plan done with richer details: %v, want exactly", why)
	}
	// A new VM's boot ISO removed once it booted: that node's work.
	done.Actions = append(done.Actions, planfile.Action{Section: "nodes", Action: state.ActionDelete, Kind: "proxmox:cidata", Name: "demo-worker-03", Node: "demo-worker-03"})
	if why := planfile.Performed(saved, done); len(why) != 0 {
		t.Errorf("the plan done with a planned node's last step: %v, want exactly", why)
	}
	done.Actions = append(done.Actions[1:],
		planfile.Action{Section: "nodes", Action: state.ActionUpdate, Kind: "kube:node", Name: "demo-worker-06", Node: "demo-worker-06"},
		planfile.Action{Section: "nodes", Action: state.ActionUpdate, Kind: "file", Name: "talosconfig"})
	want := []string{"done but not in the plan: nodes: update kube:node/demo-worker-06", "done but not in the plan: nodes: update file/talosconfig", "in the plan but not done: net: create proxmox:sdn-subnet/demo"}
	if why := planfile.Performed(saved, done); !slices.Equal(why, want) {
		t.Errorf("Performed() = %q, want %q", why, want)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
