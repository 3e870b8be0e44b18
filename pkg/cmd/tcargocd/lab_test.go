package tcargocd_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/state"
)

// TestAR3_RegistersClusterWithArgoCD: converge applies the cluster Secret
// (this cluster's server and credentials, base64 of the PEM), the
// AppProject with the merged admin and user groups, the repository Secret
// and both Applications, all accepted by Argo CD's real CRDs; a second
// converge changes nothing. No secret value is printed.
func TestAR3_RegistersClusterWithArgoCD(t *testing.T) {
	t.Parallel()
	startLabs(t)
	h := labHarness("ar3", netDoc(t, "ar3"))
	h.Config.Plugins = map[string]any{"rancher": m{"admins": l{"bob@example.edu", "alice@example.edu"}}}
	dir := clusterDir(t, labs.down)
	code, sec, stderr := h.Run(t, dir, fullSection(), "converge")
	if code != 0 || sec.Status != state.StatusSucceeded {
		t.Fatalf("converge: exit %d, section %+v, stderr %s", code, sec, stderr)
	}
	noSecrets(t, labs.down, string(sec.Outputs), strings.Join(sec.Messages, "\n"), stderr)

	cs := mgmtSecret(t, "argocd-ar3-secret")
	var cfg struct {
		TLS map[string]any `json:"tlsClientConfig"`
	}
	if err := json.Unmarshal([]byte(cs["config"]), &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	b64 := base64.StdEncoding.EncodeToString
	want := map[string]any{"insecure": false, "caData": b64(labs.down.caPEM), "certData": b64(labs.down.certPEM), "keyData": b64(labs.down.keyPEM)}
	if diff := cmp.Diff(want, cfg.TLS); diff != "" {
		t.Errorf("tlsClientConfig (-want +got):\n%s", diff)
	}
	if cs["name"] != "ar3" || cs["server"] != labs.down.srv.URL() || cs["label:argocd.argoproj.io/secret-type"] != "cluster" {
		t.Errorf("cluster Secret name %q server %q (want %s), labels %v", cs["name"], cs["server"], labs.down.srv.URL(), cs)
	}

	roles, _, _ := unstructured.NestedSlice(argoObject(t, "AppProject", "ar3").Object, "spec", "roles")
	wantRoles := []any{
		map[string]any{"name": "admin", "policies": []any{"p, proj:ar3:admin, applications, *, ar3/*, allow"}, "groups": []any{"alice@example.edu", "bob@example.edu"}},
		map[string]any{"name": "user", "policies": []any{"p, proj:ar3:user, applications, get, ar3/*, allow"}, "groups": []any{"carol@example.edu"}},
	}
	if diff := cmp.Diff(wantRoles, roles); diff != "" {
		t.Errorf("AppProject roles (-want +got):\n%s", diff)
	}
	repo := mgmtSecret(t, "repo-ar3")
	wantRepo := map[string]string{"url": gitURL, "type": "git", "name": "ar3-cluster", "project": "ar3", "username": "deploy", "password": gitToken}
	for k, v := range wantRepo {
		if repo[k] != v {
			t.Errorf("repository Secret %s = %q, want %q", k, repo[k], v)
		}
	}
	for name, repoURL := range map[string]string{"ar3": gitURL, "ar3-cluster": infraURL} {
		app := argoObject(t, "Application", name)
		if app == nil {
			t.Fatalf("Application %s missing", name)
		}
		got, _, _ := unstructured.NestedString(app.Object, "spec", "source", "repoURL")
		auto, _, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "automated")
		if got != repoURL || !cmp.Equal(auto, map[string]any{"prune": true, "selfHeal": true}) {
			t.Errorf("Application %s: repoURL %q, automated %v", name, got, auto)
		}
	}
	values, _, _ := unstructured.NestedString(argoObject(t, "Application", "ar3-cluster").Object, "spec", "source", "helm", "values")
	if !strings.Contains(values, "- 10.0.0.250/32") {
		t.Errorf("cluster Application values lack the MetalLB address:\n%s", values)
	}

	code, sec, _ = h.Run(t, dir, fullSection(), "converge")
	if code != 0 || len(sec.Plan) != 0 {
		t.Errorf("second converge: exit %d, plan %v", code, sec.Plan)
	}
}

// TestAR3_CRDsRefuseMalformed proves the acceptance above means something:
// the management cluster's CRDs refuse an Application without a
// destination and an AppProject role without a name.
func TestAR3_CRDsRefuseMalformed(t *testing.T) {
	t.Parallel()
	startLabs(t)
	k, err := kube.Load(clusterDir(t, labs.down)+"/argocd-kubeconfig", kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(name string) map[string]any { return map[string]any{"name": name, "namespace": argocd.Namespace} }
	for field, obj := range map[string]map[string]any{
		"spec.destination": {
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta("bad-app"),
			"spec": map[string]any{"project": "x", "source": map[string]any{"repoURL": gitURL}},
		},
		"spec.roles[0].name": {
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": meta("bad-project"),
			"spec": map[string]any{"roles": []any{map[string]any{"policies": []any{"p"}}}},
		},
	} {
		err := k.Apply(t.Context(), obj, "test")
		var se apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &se) || se.Status().Details == nil {
			t.Errorf("%s: apply = %v, want the CRD's 422 Invalid", field, err)
			continue
		}
		causes := fmt.Sprint(se.Status().Details.Causes)
		if !strings.Contains(causes, field) {
			t.Errorf("%s: refused for %s", field, causes)
		}
	}
}

// TestAR6_CloudConfOnlyDownstream: with cinder enabled the cloud.conf
// Secret lands in the downstream cluster only; no object of the management
// cluster holds the credential, nothing prints it; check compares it and
// converge deletes it once cinder is disabled. Missing credentials are a
// configuration error.
func TestAR6_CloudConfOnlyDownstream(t *testing.T) {
	t.Parallel()
	startLabs(t)
	h, dir := labHarness("ar6", netDoc(t, "ar6")), clusterDir(t, labs.down6)
	section := fullSection()
	section["cinder"] = m{"enabled": true, "version": "2.30.0"}
	code, sec, stderr := h.Run(t, dir, section, "converge")
	if code != 0 {
		t.Fatalf("converge: exit %d, section %+v, stderr %s", code, sec, stderr)
	}
	noSecrets(t, labs.down6, string(sec.Outputs), stderr)
	down, err := labs.down6.srv.Client().CoreV1().Secrets("cinder-csi").Get(t.Context(), "cinder-csi-cloud-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "[Global]\nauth-url=\"https://keystone.example.edu:5000/v3\"\nregion=\"RegionTwo\"\napplication-credential-id=\"app-cred-id\"\napplication-credential-secret=\"" + appCredSecret + "\"\n"
	if got := string(down.Data["cloud.conf"]); got != want {
		t.Errorf("cloud.conf = %q, want %q", got, want)
	}
	secrets, err := labs.mgmt.Client().CoreV1().Secrets("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apps, err := labs.mgmt.Dynamic().Resource(argocd.ApplicationGVR()).Namespace(argocd.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	everything, _ := json.Marshal([]any{secrets, apps})
	if strings.Contains(string(everything), appCredSecret) || strings.Contains(string(everything), base64.StdEncoding.EncodeToString([]byte(appCredSecret))[:16]) {
		t.Error("the OpenStack credential reached the management cluster")
	}
	if code, sec, _ = h.Run(t, dir, section, "check"); code != 0 || sectionOf(t, sec)["ok"] != true {
		t.Errorf("check: exit %d, outputs %s", code, sec.Outputs)
	}

	section["cinder"] = m{"enabled": false}
	if code, sec, _ = h.Run(t, dir, section, "converge"); code != 0 {
		t.Fatalf("converge without cinder: exit %d, %+v", code, sec)
	}
	if _, err := labs.down6.srv.Client().CoreV1().Secrets("cinder-csi").Get(t.Context(), "cinder-csi-cloud-config", metav1.GetOptions{}); err == nil {
		t.Error("the cloud.conf Secret is still there with cinder disabled")
	}

	h.Config.OpenStack.CredentialSecret = ""
	section["cinder"] = m{"enabled": true}
	code, sec, _ = h.Run(t, dir, section, "converge")
	if code != 2 || sec.Error == nil || !slices.ContainsFunc(sec.Error.Problems, func(p string) bool { return strings.HasPrefix(p, "openstack.credential_secret: ") }) {
		t.Errorf("no credential: exit %d, section %+v", code, sec)
	}
}
