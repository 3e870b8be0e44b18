package argocd

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

const cluster = "mycluster"

// appProject is the AppProject the argocd plugin renders (§4.3 AR-3).
func appProject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       "AppProject",
		"metadata":   map[string]any{"name": cluster, "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos": []any{"*"},
			"destinations": []any{
				map[string]any{"server": "https://203.0.113.79:6443", "namespace": "*"},
				map[string]any{"server": "https://kubernetes.default.svc", "namespace": Namespace},
			},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			"roles": []any{
				map[string]any{
					"name":     "admin",
					"policies": []any{"p, proj:" + cluster + ":admin, applications, *, " + cluster + "/*, allow"},
					"groups":   []any{"admin@example.edu"},
				},
				map[string]any{
					"name":     "user",
					"policies": []any{"p, proj:" + cluster + ":user, applications, get, " + cluster + "/*, allow"},
					"groups":   []any{"user@example.edu"},
				},
			},
		},
	}}
}

// application is the root Application the argocd plugin renders when
// git.url is set (§4.3 AR-3).
func application() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Group + "/" + Version,
		"kind":       "Application",
		"metadata":   map[string]any{"name": cluster, "namespace": Namespace},
		"spec": map[string]any{
			"project": cluster,
			"source": map[string]any{
				"repoURL":        "https://git.example.edu/apps.git",
				"path":           "charts/apps",
				"targetRevision": "HEAD",
				"helm":           map[string]any{"values": "cluster: " + cluster + "\n"},
			},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": Namespace},
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"CreateNamespace=true"},
			},
		},
	}}
}

func TestManagement(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	m := startManagement(t, inj)

	t.Run("CRDsEstablished", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{ApplicationCRD, AppProjectCRD} {
			crd, err := m.Dynamic().Resource(CRDGVR()).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !established(crd) {
				t.Errorf("%s: not Established: %v", name, crd.Object["status"])
			}
		}
		if _, err := m.Client().CoreV1().Namespaces().Get(t.Context(), Namespace, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", Namespace, err)
		}
	})

	t.Run("ApplyAndReadBack", func(t *testing.T) {
		t.Parallel()
		dyn := kubeconfigClient(t, m)
		opts := metav1.ApplyOptions{FieldManager: "talosc", Force: true}
		for _, tc := range []struct {
			obj  *unstructured.Unstructured
			path []string
		}{
			{appProject(), []string{"spec"}},
			{application(), []string{"spec"}},
		} {
			gvr := ApplicationGVR()
			if tc.obj.GetKind() == "AppProject" {
				gvr = AppProjectGVR()
			}
			if _, err := dyn.Resource(gvr).Namespace(Namespace).Apply(t.Context(), tc.obj.GetName(), tc.obj, opts); err != nil {
				t.Fatalf("apply %s: %v", tc.obj.GetKind(), err)
			}
			got, err := dyn.Resource(gvr).Namespace(Namespace).Get(t.Context(), tc.obj.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := unstructured.NestedMap(tc.obj.Object, tc.path...)
			have, _, _ := unstructured.NestedMap(got.Object, tc.path...)
			if diff := cmp.Diff(want, have); diff != "" {
				t.Errorf("%s spec read back (-applied +got):\n%s", tc.obj.GetKind(), diff)
			}
		}
		if n := m.Recorder().Counts(nil)["kubernetes PATCH /apis/argoproj.io/v1alpha1/namespaces/argocd/applications/"+cluster]; n != 1 {
			t.Errorf("recorded Application applies: %d, want 1 (calls: %v)", n, m.Recorder().Calls())
		}
	})

	t.Run("ClusterSecret", func(t *testing.T) {
		t.Parallel()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: "argocd-" + cluster + "-secret", Namespace: Namespace,
				Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"},
			},
			StringData: map[string]string{"name": cluster, "server": "https://203.0.113.79:6443", "config": `{"tlsClientConfig":{"insecure":false}}`},
		}
		if _, err := m.Client().CoreV1().Secrets(Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("SchemaRefusesInvalid", func(t *testing.T) {
		t.Parallel()
		dyn := kubeconfigClient(t, m)
		for name, mutate := range map[string]func(*unstructured.Unstructured){
			"path-not-string": func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(42), "spec", "source", "path")
			},
			"no-destination": func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "destination")
			},
		} {
			app := application()
			app.SetName("invalid-" + name)
			mutate(app)
			begin := time.Now()
			_, err := dyn.Resource(ApplicationGVR()).Namespace(Namespace).Create(t.Context(), app, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Errorf("%s: create: %v, want 422 Invalid", name, err)
				continue
			}
			t.Logf("%s: refused in %v: %v", name, time.Since(begin).Round(time.Millisecond), err)
		}
	})

	t.Run("Faults", func(t *testing.T) {
		t.Parallel()
		// Only this subtest's own path gets scripted faults; the latency
		// (global) merely slows the others down.
		const name = "faulty"
		prefix := "/apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects/" + name
		dyn := kubeconfigClient(t, m)
		get := func(dyn dynamic.Interface) error {
			_, err := dyn.Resource(AppProjectGVR()).Namespace(Namespace).Get(t.Context(), name, metav1.GetOptions{})
			return err
		}
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{{
			Service: "kubernetes", Method: http.MethodGet, PathPrefix: prefix, Nth: 1, Status: http.StatusForbidden,
		}}})
		if err := get(dyn); !apierrors.IsForbidden(err) {
			t.Errorf("scripted fault: %v, want 403", err)
		}
		if err := get(dyn); !apierrors.IsNotFound(err) {
			t.Errorf("after the scripted fault: %v, want the apiserver's 404", err)
		}
		inj.Set(labnet.Knobs{Latency: 150 * time.Millisecond})
		begin := time.Now()
		if err := get(dyn); !apierrors.IsNotFound(err) {
			t.Errorf("with latency: %v, want 404", err)
		}
		if d := time.Since(begin); d < 150*time.Millisecond {
			t.Errorf("with 150ms latency the GET took %v", d)
		}
		// The lab's own client bypasses the front door: no faults.
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: "kubernetes", PathPrefix: prefix, Status: http.StatusServiceUnavailable}}})
		if err := get(dyn); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("every-request fault: %v, want 503", err)
		}
		if err := get(m.Dynamic()); !apierrors.IsNotFound(err) {
			t.Errorf("admin client under the fault: %v, want 404", err)
		}
		inj.Set(labnet.Knobs{})
	})
}

func TestEmbeddedCRDs(t *testing.T) {
	t.Parallel()
	manifests, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range manifests {
		for line := range strings.SplitSeq(string(m), "\n") {
			if name, ok := strings.CutPrefix(line, "  name: "); ok {
				names = append(names, name)
				break
			}
		}
	}
	if diff := cmp.Diff([]string{ApplicationCRD, AppProjectCRD}, names); diff != "" {
		t.Errorf("embedded CRDs (-want +got):\n%s", diff)
	}
	if len(manifests[0]) < 400_000 {
		t.Errorf("application CRD: %d bytes, want the full upstream file (~416 KB)", len(manifests[0]))
	}
}

func TestEstablished(t *testing.T) {
	t.Parallel()
	cond := func(typ, status string) any { return map[string]any{"type": typ, "status": status} }
	for name, tc := range map[string]struct {
		conds []any
		want  bool
	}{
		"none":        {nil, false},
		"both":        {[]any{cond("NamesAccepted", "True"), cond("Established", "True")}, true},
		"names-only":  {[]any{cond("NamesAccepted", "True")}, false},
		"established": {[]any{cond("Established", "True"), cond("NamesAccepted", "False")}, false},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.conds}}}
		if got := established(u); got != tc.want {
			t.Errorf("%s: established = %v, want %v", name, got, tc.want)
		}
	}
}
