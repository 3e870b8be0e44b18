package kubeapi

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// checkReportedVersion: GET /version (and /version/) through the front
// door reports the version the server is told, major and minor included,
// with the binary's build; the apiserver itself, and the front door told
// nothing usable, report the binary's.
func checkReportedVersion(t *testing.T, srv *Server, admin *rest.Config, reported *atomic.Pointer[string]) {
	t.Helper()
	t.Cleanup(func() { reported.Store(nil) })
	binary, err := kubernetes.NewForConfigOrDie(srv.RESTConfig()).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if binary.GitVersion != DefaultKubeletVersion || binary.GoVersion == "" {
		t.Fatalf("the binary reports %+v", binary)
	}
	hc, err := rest.HTTPClientFor(admin)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) apiversion.Info {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info apiversion.Info
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s, %v", path, resp.Status, err)
		}
		return info
	}
	for _, tc := range []struct{ told, gitVersion, minor string }{
		{"v1.36.1", "v1.36.1", "36"},
		{"v1.34.3", "v1.34.3", "34"},
		{"not-a-version", binary.GitVersion, binary.Minor},
		{"", binary.GitVersion, binary.Minor},
	} {
		reported.Store(&tc.told)
		want := *binary
		want.GitVersion, want.Minor = tc.gitVersion, tc.minor
		for _, path := range []string{"/version", "/version/"} {
			if d := cmp.Diff(want, get(path)); d != "" {
				t.Errorf("GET %s told %q (-want +got):\n%s", path, tc.told, d)
			}
		}
	}
	reported.Store(new("v1.36.1"))
	v, err := kubernetes.NewForConfigOrDie(admin).Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.36.1" {
		t.Errorf("client-go's ServerVersion through the front door: %v, %v", v, err)
	}
	if direct, err := kubernetes.NewForConfigOrDie(srv.RESTConfig()).Discovery().ServerVersion(); err != nil || direct.GitVersion != binary.GitVersion {
		t.Errorf("the apiserver itself: %v, %v; want the binary's %s", direct, err, binary.GitVersion)
	}
}
