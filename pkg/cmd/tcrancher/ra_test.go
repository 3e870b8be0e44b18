package tcrancher_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/talosc/talosc/pkg/lab/kubeapi/kubeapitest"
	"github.com/talosc/talosc/pkg/lab/rancher"
	"github.com/talosc/talosc/pkg/state"
)

// TestRA2_RA3_ImportsOnce: converge imports the cluster (a Rancher cluster
// by its name, created once its namespace exists and its token's manifest
// URL is filled, the agent's objects applied downstream, where the agent
// connects), binds the members, and publishes the id; a second converge
// changes nothing and never applies the manifest again (rancher#38072).
func TestRA2_RA3_ImportsOnce(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	sec := l.section([]any{"alice"}, []any{"bob"})
	out := l.converge(t, sec)
	id := clusterID(t, out)
	if got := l.rancher.Clusters(); len(got) != 1 || got[0].Name != "demo" || got[0].ID != id {
		t.Fatalf("Rancher clusters: %v", got)
	}
	l.connected(t, id)
	want := []string{
		"cluster-member " + l.principal(t, "bob"), "cluster-owner " + l.principal(t, "alice"),
		"cluster-owner " + l.principal(t, "dave"), "cluster-owner " + l.rancher.AdminPrincipalID,
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, l.bindings(id)); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
	name, _, err := rancher.AgentCredentials(t.Context(), l.down.Client())
	if err != nil {
		t.Fatal(err)
	}
	calls := len(l.down.Recorder().Calls())
	again := l.converge(t, sec)
	if clusterID(t, again) != id || len(again.Plan) != 0 {
		t.Errorf("second converge: %+v", again)
	}
	if now, _, _ := rancher.AgentCredentials(t.Context(), l.down.Client()); now != name {
		t.Errorf("the agent was redeployed by a second converge: %s, was %s", now, name)
	}
	for _, c := range l.down.Recorder().Calls()[calls:] {
		if c.Method == http.MethodPatch {
			t.Errorf("the second converge changed the downstream cluster: %s %s", c.Method, c.Path)
		}
	}
}

// TestRA4_SameNamedForeignClusterNeverAttached: a Rancher cluster named
// like this one whose agent runs in another cluster is neither attached
// to nor deleted: converge and destroy refuse, nothing changes.
func TestRA4_SameNamedForeignClusterNeverAttached(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	id, err := l.rancher.ImportByHand(t.Context(), "demo", kubeapitest.Standalone(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	before := l.bindings(id)
	sec := l.section([]any{"alice"}, nil)
	for _, hook := range [][]string{{"converge"}, {"destroy", "--yes"}} {
		code, out, _ := l.run(t, sec, hook...)
		if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, "does not match the downstream cluster") {
			t.Errorf("%v on a foreign cluster: exit %d, %+v", hook, code, out)
		}
	}
	if got := l.rancher.Clusters(); len(got) != 1 || got[0].ID != id || !got[0].Connected {
		t.Errorf("the foreign cluster was touched: %v", got)
	}
	if diff := cmp.Diff(before, l.bindings(id)); diff != "" {
		t.Errorf("the foreign cluster's bindings changed (-before +after):\n%s", diff)
	}
}

// TestRA4_ResumesAnImportThatStopped: an import that stopped after
// talosc made the Rancher cluster (its registration token refused) leaves
// a pending cluster carrying talosc's marker for this cluster and no agent
// downstream; the next converge resumes it, and makes no second one.
func TestRA4_ResumesAnImportThatStopped(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	l.rancher.ScriptError(http.MethodPost, "/v3/clusterRegistrationTokens", http.StatusInternalServerError, map[string]any{"type": "error", "status": 500, "message": "busy"})
	if code, out, _ := l.run(t, l.section(nil, nil), "converge"); code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, "busy") {
		t.Fatalf("converge with the token refused: exit %d, %+v", code, out)
	}
	stopped := l.rancher.Clusters()
	if len(stopped) != 1 || stopped[0].Connected {
		t.Fatalf("after the stopped import: %v, want one pending cluster", stopped)
	}
	if got := clusterID(t, l.converge(t, l.section(nil, nil))); got != stopped[0].ID {
		t.Errorf("converge published %s, want the pending cluster %s", got, stopped[0].ID)
	}
	l.connected(t, stopped[0].ID)
	if n := len(l.rancher.Clusters()); n != 1 {
		t.Errorf("%d Rancher clusters, want 1", n)
	}
}

// TestRA4_PendingClusterWithoutOurMarkerIsNeverTaken (RA-12): a pending
// Rancher cluster of this name that talosc did not make for this cluster
// (made by hand, or by talosc for an earlier cluster of this name) is
// neither resumed, bound nor deleted: converge and destroy refuse naming
// it and the fix, nothing changes in Rancher or downstream.
func TestRA4_PendingClusterWithoutOurMarkerIsNeverTaken(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]map[string]any{
		"by hand": {"type": "cluster", "name": "demo"},
		"talosc's for an earlier cluster": {
			"type": "cluster", "name": "demo",
			"labels": map[string]string{"talosc.dev/managed-by": "talosc"}, "annotations": map[string]string{"talosc.dev/cluster-identity": "k8s-ca-sha256-0123"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, rancher.ProviderLocal)
			id := l.api(t, http.MethodPost, "/v3/clusters", body)["id"].(string)
			before := l.bindings(id)
			sec := l.section([]any{"alice"}, nil)
			for _, hook := range [][]string{{"converge"}, {"destroy", "--yes"}} {
				code, out, _ := l.run(t, sec, hook...)
				if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, `the pending Rancher cluster "demo" (`+id+`)`) ||
					!strings.Contains(out.Error.Message, "refusing to resume, bind or delete it: delete it in Rancher") {
					t.Errorf("%v on a pending cluster not ours: exit %d, %+v", hook, code, out)
				}
			}
			if got := l.rancher.Clusters(); len(got) != 1 || got[0].ID != id || got[0].Connected {
				t.Errorf("the pending cluster was touched: %v", got)
			}
			if diff := cmp.Diff(before, l.bindings(id)); diff != "" {
				t.Errorf("its bindings changed (-before +after):\n%s", diff)
			}
			if _, _, err := rancher.AgentCredentials(t.Context(), l.down.Client()); err == nil {
				t.Error("an agent was installed downstream")
			}
		})
	}
}

// TestRA4_RA10_OrphanedAgent: the Rancher cluster is deleted behind
// talosc's back; converge refuses to import again over the orphaned
// agent, naming the way out; destroy uninstalls it (the namespace goes,
// Rancher's finalizer taken off) and converge then imports afresh.
func TestRA4_RA10_OrphanedAgent(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	sec := l.section(nil, nil)
	id := clusterID(t, l.converge(t, sec))
	l.connected(t, id)
	l.api(t, http.MethodDelete, "/v3/clusters/"+id, nil)
	waitGone(t, l, id)
	code, out, _ := l.run(t, sec, "converge")
	if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, `run "kubectl talosc plugin rancher destroy" to uninstall the orphaned agent`) {
		t.Fatalf("converge over an orphaned agent: exit %d, %+v", code, out)
	}
	if n := len(l.rancher.Clusters()); n != 0 {
		t.Errorf("%d Rancher clusters after the refusal", n)
	}
	if code, out, stderr := l.run(t, sec, "destroy", "--yes"); code != 0 || out.Status != state.StatusSucceeded {
		t.Fatalf("destroy of an orphaned agent: exit %d, %+v\n%s", code, out, stderr)
	}
	ns, err := l.down.Client().CoreV1().Namespaces().Get(t.Context(), rancher.AgentNamespace, metav1.GetOptions{})
	if err == nil && (ns.DeletionTimestamp == nil || slices.Contains(ns.Finalizers, rancher.NamespaceAuthFinalizer)) {
		t.Errorf("cattle-system after destroy: deleting %v, finalizers %v", ns.DeletionTimestamp, ns.Finalizers)
	}
	if _, _, err := rancher.AgentCredentials(t.Context(), l.down.Client()); err == nil {
		t.Error("the agent is still installed")
	}
}

// TestRA10_Destroy deletes the Rancher cluster and uninstalls the agent;
// a dry run changes nothing.
func TestRA10_Destroy(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	sec := l.section([]any{"alice"}, nil)
	id := clusterID(t, l.converge(t, sec))
	l.connected(t, id)
	code, out, _ := l.run(t, sec, "destroy", "--dry-run")
	if code != 0 || out.Status != state.StatusPlanned || len(l.rancher.Clusters()) != 1 {
		t.Fatalf("dry-run destroy: exit %d, %+v, clusters %v", code, out, l.rancher.Clusters())
	}
	if code, out, _ := l.run(t, sec, "destroy", "--yes"); code != 0 || out.Status != state.StatusSucceeded {
		t.Fatalf("destroy: exit %d, %+v", code, out)
	}
	waitGone(t, l, id)
	if _, _, err := rancher.AgentCredentials(t.Context(), l.down.Client()); err == nil {
		t.Error("the agent is still installed")
	}
	if code, out, _ := l.run(t, sec, "destroy", "--yes"); code != 0 || !strings.Contains(strings.Join(out.Messages, " "), "nothing to remove") {
		t.Errorf("second destroy: exit %d, %+v", code, out)
	}
}

func waitGone(t *testing.T, l *lab, id string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if !slices.ContainsFunc(l.rancher.Clusters(), func(c rancher.Cluster) bool { return c.ID == id }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s was never removed", id)
		}
	}
}

// TestRA11_UnreadableAgentIsNotAbsent: a downstream cluster that does not
// answer is never read as "no agent installed": converge fails naming the
// read and imports nothing.
func TestRA11_UnreadableAgentIsNotAbsent(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	if err := l.down.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, _ := l.run(t, l.section(nil, nil), "converge")
	if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, "read the Rancher agent of the cluster") {
		t.Errorf("converge with the cluster's API down: exit %d, %+v", code, out)
	}
	if got := l.rancher.Clusters(); len(got) != 0 {
		t.Errorf("Rancher clusters: %v", got)
	}
}
