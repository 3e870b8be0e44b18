package tcargocd_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/talosc/talosc/pkg/state"
)

const idAnnotation = "annotation:rancher.cattle.io/cluster-id"

// installAgent puts Rancher's cluster agent into c as the import manifest
// and Rancher's redeploy leave it: the Deployment naming its credentials
// Secret by CATTLE_CREDENTIAL_NAME (or, with env false, by the
// cattle-credentials volume only) and, unless credential is "", that
// Secret with namespace clusterID. A decoy credentials Secret of another
// id sits beside it: several exist after a redeploy (plugins.md §2.5).
func installAgent(t *testing.T, c *cluster, credential, clusterID string, env bool) {
	t.Helper()
	ctx, k := t.Context(), c.srv.Client()
	if _, err := k.CoreV1().Namespaces().Get(ctx, "cattle-system", metav1.GetOptions{}); err != nil {
		if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cattle-system"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name, ns string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cattle-system"},
			Data:       map[string][]byte{"url": []byte("https://rancher.example.edu"), "token": []byte("agent-token"), "namespace": []byte(ns)},
		}
	}
	_ = k.CoreV1().Secrets("cattle-system").Delete(ctx, "cattle-credentials-aaaa", metav1.DeleteOptions{})
	if _, err := k.CoreV1().Secrets("cattle-system").Create(ctx, secret("cattle-credentials-aaaa", "c-decoy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if credential != "" {
		_ = k.CoreV1().Secrets("cattle-system").Delete(ctx, credential, metav1.DeleteOptions{})
		if _, err := k.CoreV1().Secrets("cattle-system").Create(ctx, secret(credential, clusterID), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	name := credential
	if name == "" {
		name = "cattle-credentials-missing"
	}
	container := corev1.Container{Name: "cluster-register", Image: "rancher/rancher-agent:v2.11.3"}
	if env {
		container.Env = []corev1.EnvVar{{Name: "CATTLE_CREDENTIAL_NAME", Value: name}}
	}
	labels := map[string]string{"app": "cattle-cluster-agent"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cattle-cluster-agent", Namespace: "cattle-system"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{{
						Name: "cattle-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}},
					}},
				},
			},
		},
	}
	_ = k.AppsV1().Deployments("cattle-system").Delete(ctx, d.Name, metav1.DeleteOptions{})
	if _, err := k.AppsV1().Deployments("cattle-system").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rancherDoc is a state document in which the rancher plugin published
// outputs.
func rancherDoc(t *testing.T, cluster, outputs string) *state.Document {
	t.Helper()
	doc := netDoc(t, cluster)
	if err := doc.Put("rancher", state.Section{Status: state.StatusSucceeded, Outputs: []byte(outputs)}); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestAR7_RancherID: the cluster Secret carries the id the rancher plugin
// published; standalone, the downstream agent's (CATTLE_CREDENTIAL_NAME,
// else the cattle-credentials volume, never another cattle-credentials-*
// Secret); no id without an agent or before Rancher's redeploy; and a
// broken agent refuses the converge before anything is written. The
// subtests share one downstream cluster and run in order.
func TestAR7_RancherID(t *testing.T) { //nolint:tparallel // the subtests change one downstream cluster's agent in turn
	t.Parallel()
	startLabs(t)
	dir := clusterDir(t, labs.down7)
	section := m{"kubeconfig": "argocd-kubeconfig"}
	converge := func(t *testing.T, name string, doc *state.Document) (int, map[string]any, string) {
		t.Helper()
		if doc == nil {
			doc = netDoc(t, name)
		}
		code, sec, stderr := labHarness(name, doc).Run(t, dir, section, "converge")
		if code != 0 {
			return code, nil, stderr
		}
		return code, sectionOf(t, sec), stderr
	}
	stamped := func(t *testing.T, name, want, wantSource string) {
		t.Helper()
		code, out, stderr := converge(t, name, nil)
		got, has := mgmtSecret(t, "argocd-"+name+"-secret")[idAnnotation]
		if code != 0 || got != want || has != (want != "") || !strings.Contains(out["rancher_id_source"].(string), wantSource) {
			t.Errorf("exit %d (%s): annotation %q (present %t), want %q; outputs %v", code, stderr, got, has, want, out)
		}
	}

	t.Run("no agent", func(t *testing.T) { stamped(t, "ar7-none", "", "no Rancher agent") })
	t.Run("rancher plugin result", func(t *testing.T) {
		code, _, stderr := converge(t, "ar7-result", rancherDoc(t, "ar7-result", `{"cluster_id":"c-fromrancher"}`))
		if got := mgmtSecret(t, "argocd-ar7-result-secret")[idAnnotation]; code != 0 || got != "c-fromrancher" {
			t.Errorf("exit %d (%s): annotation %q", code, stderr, got)
		}
	})
	t.Run("broken agent refuses", func(t *testing.T) {
		installAgent(t, labs.down7, "", "", true)
		code, _, stderr := converge(t, "ar7-broken", nil)
		if code != 1 || !strings.Contains(stderr, "credentials Secret cattle-system/cattle-credentials-missing is missing") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if mgmtSecret(t, "argocd-ar7-broken-secret") != nil || argoObject(t, "AppProject", "ar7-broken") != nil {
			t.Error("a refused converge wrote to the management cluster")
		}
	})
	t.Run("registration pending", func(t *testing.T) {
		installAgent(t, labs.down7, "cattle-credentials-bbbb", "", true)
		stamped(t, "ar7-pending", "", "not registered yet")
	})
	t.Run("agent by env", func(t *testing.T) {
		installAgent(t, labs.down7, "cattle-credentials-cccc", "c-agent1", true)
		stamped(t, "ar7-env", "c-agent1", "the Rancher agent downstream")
	})
	t.Run("agent by volume", func(t *testing.T) {
		installAgent(t, labs.down7, "cattle-credentials-dddd", "c-agent2", false)
		stamped(t, "ar7-volume", "c-agent2", "the Rancher agent downstream")
	})
	t.Run("rancher says none", func(t *testing.T) {
		// An identity mismatch without an agent: the rancher plugin publishes
		// no id, and the agent's is not used instead.
		code, _, _ := converge(t, "ar7-mismatch", rancherDoc(t, "ar7-mismatch", `{"cluster_id":""}`))
		if _, has := mgmtSecret(t, "argocd-ar7-mismatch-secret")[idAnnotation]; code != 0 || has {
			t.Errorf("exit %d, annotation present %t", code, has)
		}
	})
}
