package talosc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// TestDestroyRefusesAClusterItCannotSee: no owned machine listed while the
// kubeconfig's API answers (wrong credentials, lost tags, a renamed
// cluster), or machines that are none of the live cluster's nodes, refuse
// destroy (exit 1) naming the endpoint; otherwise destroy may go on
// (I-D1).
func TestDestroyRefusesAClusterItCannotSee(t *testing.T) {
	t.Parallel()
	cfg := &config.Cluster{Name: "demo", Dir: "/srv/demo"}
	for _, tc := range []struct {
		name   string
		survey destroySurvey
		refuse string
	}{
		{"none listed, API answers", destroySurvey{up: true, endpoint: "https://10.0.0.5:6443"}, "lists no machine owned by cluster \"demo\", but its Kubernetes API at https://10.0.0.5:6443 answers"},
		{"another cluster's machines", destroySurvey{up: true, endpoint: "https://10.0.0.5:6443", machines: []string{"demo-cp-01"}, nodes: []string{"prod-cp-01"}}, "none of the 1 machines"},
		{"none listed, API silent", destroySurvey{endpoint: "https://10.0.0.5:6443"}, ""},
		{"none listed, no kubeconfig", destroySurvey{}, ""},
		{"its machines, API answers", destroySurvey{up: true, machines: []string{"demo-cp-01", "demo-w-01"}, nodes: []string{"demo-cp-01"}}, ""},
		{"its machines, API answers, no node yet", destroySurvey{up: true, machines: []string{"demo-cp-01"}}, ""},
	} {
		err := tc.survey.refusal(cfg)
		if tc.refuse == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			}
			continue
		}
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitFailure || !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), "no plugin ran") {
			t.Errorf("%s: %v, want exit 1 saying %q and that no plugin ran", tc.name, err, tc.refuse)
		}
	}
}

// TestDestroyedAllNeedsTheRelist: the identity is kept aside only when the
// nodes phase reported, after its teardown, that no owned machine is left;
// no report, a failed section or a machine left keep it (exit 1).
func TestDestroyedAllNeedsTheRelist(t *testing.T) {
	t.Parallel()
	doc := func(status state.Status, outputs any) *state.Document {
		d := state.New("demo", actionDestroy)
		sec := state.Section{Status: status}
		if outputs != nil {
			if err := sec.SetOutputs(outputs); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Put("nodes", sec); err != nil {
			t.Fatal(err)
		}
		return d
	}
	none := map[string]any{"provider": "openstack", "machines": []any{}}
	left := map[string]any{"provider": "openstack", "machines": []any{map[string]any{"hostname": "demo-worker-01"}}}
	if err := destroyedAll(doc(state.StatusSucceeded, none)); err != nil {
		t.Errorf("none left: %v", err)
	}
	for name, d := range map[string]*state.Document{
		"a machine left": doc(state.StatusSucceeded, left),
		"no outputs":     doc(state.StatusSucceeded, nil),
		"failed":         doc(state.StatusFailed, none),
		"no section":     state.New("demo", actionDestroy),
		"no document":    nil,
	} {
		if err := destroyedAll(d); err == nil || !strings.Contains(err.Error(), config.TalosSecretsFile) {
			t.Errorf("%s: %v, want a refusal that keeps %s", name, err, config.TalosSecretsFile)
		}
	}
	if err := destroyedAll(doc(state.StatusSucceeded, left)); err == nil || !strings.Contains(err.Error(), "demo-worker-01") {
		t.Errorf("the machine left is not named: %v", err)
	}
}

// TestKeepIdentityDated: a proved destroy moves talossecrets.yaml to a
// dated name, mode 0600, never over an existing file, and a dry run only
// says so.
func TestKeepIdentityDated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var errOut strings.Builder
	s := &session{dir: dir, out: ui.New(&errOut, nil)}
	src := filepath.Join(dir, config.TalosSecretsFile)
	mustDo(t, os.WriteFile(src, []byte("ca: key\n"), 0o644))
	now := time.Date(2026, 12, 5, 17, 45, 0, 0, time.UTC)
	mustDo(t, s.keepIdentity(true, now))
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("a dry run moved the identity: %v", err)
	}
	mustDo(t, s.keepIdentity(false, now))
	dst := filepath.Join(dir, "talossecrets.yaml.destroyed-20261205T174500Z")
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept identity %s: %v, mode %v; want 0600", dst, err, fi)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", src, err)
	}
	if !strings.Contains(errOut.String(), dst) {
		t.Errorf("destroy does not say where the identity is: %q", errOut.String())
	}
	mustDo(t, os.WriteFile(src, []byte("another\n"), 0o600))
	mustDo(t, s.keepIdentity(false, now))
	if data, _ := os.ReadFile(dst); string(data) != "ca: key\n" {
		t.Errorf("a second destroy in the same second replaced the kept identity: %q", data)
	}
	if data, _ := os.ReadFile(dst + ".2"); string(data) != "another\n" {
		t.Errorf("the second identity was not kept as %s.2: %q", dst, data)
	}
}
