package tcargocd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/state"
)

// changes lists the section's plan as "action kind name".
func changes(sec state.Section) []string {
	out := []string{}
	for _, c := range sec.Plan {
		out = append(out, string(c.Action)+" "+c.Kind+" "+c.Name)
	}
	return out
}

// states lists a check report's resources as "kind name: state".
func states(t *testing.T, sec state.Section) []string {
	t.Helper()
	var out []string
	for _, r := range sectionOf(t, sec)["resources"].([]any) {
		r := r.(map[string]any)
		out = append(out, r["kind"].(string)+" "+r["name"].(string)+": "+r["state"].(string))
	}
	return out
}

// TestAR8_PlanWritesNothing: plan lists what converge would create and
// writes nothing; after a change made by hand, it lists exactly that.
func TestAR8_PlanWritesNothing(t *testing.T) {
	t.Parallel()
	h, dir := setup(t, "ar8p")
	code, sec, stderr := h.Run(t, dir, fullSection(), "converge", "--dry-run")
	want := []string{
		"create kube:secret argocd/argocd-ar8p-secret", "create kube:appproject argocd/ar8p", "create kube:secret argocd/repo-ar8p",
		"create kube:application argocd/ar8p", "create kube:application argocd/ar8p-cluster",
	}
	if diff := cmp.Diff(want, changes(sec)); code != 0 || sec.Status != state.StatusPlanned || diff != "" {
		t.Errorf("plan: exit %d, status %s, changes (-want +got):\n%s", code, sec.Status, diff)
	}
	noSecrets(t, labs.down, string(sec.Outputs), stderr)
	if mgmtSecret(t, "argocd-ar8p-secret") != nil || mgmtSecret(t, "repo-ar8p") != nil || argoObject(t, "AppProject", "ar8p") != nil || argoObject(t, "Application", "ar8p") != nil {
		t.Fatal("plan wrote to the management cluster")
	}

	if code, _, _ := h.Run(t, dir, fullSection(), "converge"); code != 0 {
		t.Fatalf("converge: exit %d", code)
	}
	section := fullSection()
	section["automated"] = false
	code, sec, _ = h.Run(t, dir, section, "converge", "--dry-run")
	want = []string{"update kube:application argocd/ar8p", "update kube:application argocd/ar8p-cluster"}
	if diff := cmp.Diff(want, changes(sec)); code != 0 || diff != "" {
		t.Errorf("plan after a change: exit %d, changes (-want +got):\n%s", code, diff)
	}
	if _, has, _ := unstructured.NestedMap(argoObject(t, "Application", "ar8p").Object, "spec", "syncPolicy", "automated"); !has {
		t.Error("plan changed the Application")
	}
}

// TestAR8_StatusCheckDestroy: status says which objects exist; check is ok
// until one is changed or deleted by hand, naming it; destroy deletes what
// converge applied, Applications before their AppProject, and leaves
// another cluster's Secret alone.
func TestAR8_StatusCheckDestroy(t *testing.T) {
	t.Parallel()
	h, dir := setup(t, "ar8")
	if code, sec, _ := h.Run(t, dir, fullSection(), "converge"); code != 0 {
		t.Fatalf("converge: exit %d, %+v", code, sec)
	}
	code, sec, _ := h.Run(t, dir, fullSection(), "status")
	for _, r := range sectionOf(t, sec)["resources"].([]any) {
		if r.(map[string]any)["exists"] != true {
			t.Errorf("status: exit %d, %v does not exist", code, r)
		}
	}
	if code, sec, _ = h.Run(t, dir, fullSection(), "check"); code != 0 || sectionOf(t, sec)["ok"] != true {
		t.Fatalf("check after converge: exit %d, %s", code, sec.Outputs)
	}

	ctx, dyn := t.Context(), labs.mgmt.Dynamic().Resource(argocd.AppProjectGVR()).Namespace(argocd.Namespace)
	project := argoObject(t, "AppProject", "ar8")
	_ = unstructured.SetNestedSlice(project.Object, []any{"https://elsewhere.example/*"}, "spec", "sourceRepos")
	if _, err := dyn.Update(ctx, project, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := labs.mgmt.Client().CoreV1().Secrets(argocd.Namespace).Delete(ctx, "repo-ar8", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, sec, _ = h.Run(t, dir, fullSection(), "check")
	want := []string{
		"Secret argocd/argocd-ar8-secret: ok", "AppProject argocd/ar8: differs", "Secret argocd/repo-ar8: missing",
		"Application argocd/ar8: ok", "Application argocd/ar8-cluster: ok",
	}
	if diff := cmp.Diff(want, states(t, sec)); code != 0 || sectionOf(t, sec)["ok"] != false || diff != "" {
		t.Errorf("check after hand edits: exit %d, ok %v, states (-want +got):\n%s", code, sectionOf(t, sec)["ok"], diff)
	}
	// check runs without the net phase's outputs and says what it could not compare.
	h.State = nil
	if code, sec, _ = h.Run(t, dir, fullSection(), "check"); code != 0 || sectionOf(t, sec)["not_compared"] == nil {
		t.Errorf("check without net outputs: exit %d, %s", code, sec.Outputs)
	}

	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-other-secret", Namespace: argocd.Namespace, Labels: map[string]string{
		"argocd.argoproj.io/secret-type": "cluster", "app.kubernetes.io/managed-by": "talosc", "talosc.io/cluster": "other",
	}}}
	if _, err := labs.mgmt.Client().CoreV1().Secrets(argocd.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, sec, stderr := h.Run(t, dir, fullSection(), "destroy", "--yes")
	want = []string{
		"delete kube:application argocd/ar8-cluster", "delete kube:application argocd/ar8", "delete kube:appproject argocd/ar8", "delete kube:secret argocd/argocd-ar8-secret",
	}
	if diff := cmp.Diff(want, changes(sec)); code != 0 || diff != "" {
		t.Errorf("destroy: exit %d (%s), changes (-want +got):\n%s", code, stderr, diff)
	}
	if mgmtSecret(t, "argocd-ar8-secret") != nil || argoObject(t, "AppProject", "ar8") != nil || argoObject(t, "Application", "ar8-cluster") != nil {
		t.Error("destroy left objects behind")
	}
	if mgmtSecret(t, "argocd-other-secret") == nil {
		t.Error("destroy deleted another cluster's Secret")
	}
}

// TestAR8_RefusesForeignObject: an object of one of the plugin's names that
// talosc did not apply for this cluster refuses converge before anything
// is written, and destroy leaves it alone.
func TestAR8_RefusesForeignObject(t *testing.T) {
	t.Parallel()
	h, dir := setup(t, "ar8f")
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-ar8f", Namespace: argocd.Namespace}, StringData: map[string]string{"url": "https://theirs"}}
	if _, err := labs.mgmt.Client().CoreV1().Secrets(argocd.Namespace).Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, sec, stderr := h.Run(t, dir, fullSection(), "converge")
	if code != 1 || !strings.Contains(stderr, "Secret argocd/repo-ar8f (management cluster) exists but is not labelled") {
		t.Errorf("converge: exit %d, %+v, stderr %s", code, sec, stderr)
	}
	if mgmtSecret(t, "argocd-ar8f-secret") != nil || argoObject(t, "AppProject", "ar8f") != nil {
		t.Error("a refused converge wrote to the management cluster")
	}
	code, sec, _ = h.Run(t, dir, fullSection(), "destroy", "--yes")
	msgs := strings.Join(sec.Messages, "\n")
	if code != 0 || len(sec.Plan) != 0 || !strings.Contains(msgs, "left alone: Secret argocd/repo-ar8f") || mgmtSecret(t, "repo-ar8f")["url"] != "https://theirs" {
		t.Errorf("destroy: exit %d, plan %v, messages %s", code, sec.Plan, msgs)
	}
}

// TestAR1_ContextSelectsTarget: argocd.context picks the apply target among
// the kubeconfig's contexts; an unknown one is an error naming the keys, and
// one the management cluster refuses (401) makes every hook fail.
func TestAR1_ContextSelectsTarget(t *testing.T) {
	t.Parallel()
	startLabs(t)
	dir := clusterDir(t, labs.down)
	kc, err := clientcmd.Load(labs.mgmt.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts["argocd"] = kc.Contexts[kc.CurrentContext]
	kc.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: kc.Contexts["argocd"].AuthInfo}
	kc.AuthInfos["stranger"] = &clientcmdapi.AuthInfo{Token: "not-a-token"}
	kc.Contexts["stranger"] = &clientcmdapi.Context{Cluster: kc.Contexts["argocd"].Cluster, AuthInfo: "stranger"}
	kc.CurrentContext = "nowhere"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "two-contexts")); err != nil {
		t.Fatal(err)
	}
	h := labHarness("ar1", netDoc(t, "ar1"))
	code, sec, stderr := h.Run(t, dir, m{"kubeconfig": "two-contexts", "context": "argocd"}, "converge")
	if code != 0 || mgmtSecret(t, "argocd-ar1-secret") == nil {
		t.Errorf("context argocd: exit %d, %+v, stderr %s", code, sec, stderr)
	}
	// A management cluster that answers 401 is unreadable, never empty:
	// every hook refuses, destroy included.
	for _, hook := range []string{"converge", "destroy", "check"} {
		code, sec, _ = h.Run(t, dir, m{"kubeconfig": "two-contexts", "context": "stranger"}, hook, "--yes")
		if hook == "check" && (code != 1 || !strings.Contains(string(sec.Outputs), `"ok":false`)) || hook != "check" && code != 1 {
			t.Errorf("%s with a 401: exit %d, %+v", hook, code, sec)
		}
	}
	code, _, stderr = h.Run(t, dir, m{"kubeconfig": "two-contexts", "context": "missing"}, "converge")
	if code != 1 || !strings.Contains(stderr, `argocd.kubeconfig/argocd.context in secrets.yaml): kubeconfig `+filepath.Join(dir, "two-contexts")+` has no context "missing"`) {
		t.Errorf("context missing: exit %d, stderr %s", code, stderr)
	}
}

// TestAR4_StandaloneRunKeepsAddresses: a standalone run has no net phase
// outputs; it keeps the addresses the cluster Application got from the
// converge that applied it (nothing changes), and on a cluster never
// registered it refuses rather than render empty addresses.
func TestAR4_StandaloneRunKeepsAddresses(t *testing.T) {
	t.Parallel()
	startLabs(t)
	dir := clusterDir(t, labs.down)
	h := labHarness("ar4", nil)
	code, sec, stderr := h.Run(t, dir, fullSection(), "converge")
	if code != 1 || !strings.Contains(stderr, "the ingress addresses are unknown") || mgmtSecret(t, "argocd-ar4-secret") != nil {
		t.Errorf("first standalone converge: exit %d, %+v, stderr %s", code, sec, stderr)
	}
	h.State = netDoc(t, "ar4")
	if code, sec, _ = h.Run(t, dir, fullSection(), "converge"); code != 0 || len(sec.Plan) != 5 {
		t.Fatalf("converge: exit %d, %+v", code, sec)
	}
	h.State = nil
	code, sec, _ = h.Run(t, dir, fullSection(), "converge")
	if code != 0 || len(sec.Plan) != 0 || !strings.Contains(strings.Join(sec.Messages, "\n"), "ingress addresses are kept") {
		t.Errorf("standalone converge: exit %d, plan %v, messages %v", code, sec.Plan, sec.Messages)
	}
	values, _, _ := unstructured.NestedString(argoObject(t, "Application", "ar4-cluster").Object, "spec", "source", "helm", "values")
	if !strings.Contains(values, "- "+ingressVIP+"/32") || !strings.Contains(values, "publicIP: "+ingressFIP) || !strings.Contains(values, "project: physics") {
		t.Errorf("the standalone converge lost the addresses or the project:\n%s", values)
	}
}
