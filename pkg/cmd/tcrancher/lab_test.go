package tcrancher_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/kubeapi/kubeapitest"
	"github.com/talosc/talosc/pkg/lab/rancher"
	"github.com/talosc/talosc/pkg/state"
)

// lab is a lab Rancher and a downstream cluster (a real kube-apiserver)
// whose kubeconfig is in dir, as after the first bootstrap.
type lab struct {
	rancher *rancher.Server
	down    *kubeapi.Server
	dir     string
}

// labUsers are the lab's users, with look-alikes a prefix search returns.
var labUsers = []rancher.User{
	{Username: "alice", DisplayName: "Alice Liddell"},
	{Username: "alicia"},
	{Username: "bob", DisplayName: "Bob Builder"},
	{Username: "bobby"},
	{Username: "carol"},
	{Username: "dave", GlobalOwner: true},
}

// newLab starts a lab Rancher answering as provider, a downstream
// cluster, and the agent that connects once its manifest is applied.
func newLab(t *testing.T, provider string) *lab {
	t.Helper()
	r, err := rancher.Start(t.Context(), rancher.Options{
		Provider: provider, Users: labUsers, Groups: []rancher.Group{{Name: "ops", PrincipalID: "openldap_group://cn=ops,dc=lab"}},
		ConditionDelay: 300 * time.Millisecond, CommandDelay: 200 * time.Millisecond, RemoveDelay: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	l := &lab{rancher: r, down: kubeapitest.Standalone(t), dir: t.TempDir()}
	kc, err := l.down.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{config.KubeconfigFile: kc, "rancher-ca.pem": r.CAPEM} {
		if err := os.WriteFile(filepath.Join(l.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	go r.WatchAgents(t.Context(), 50*time.Millisecond, func() []kubernetes.Interface { return []kubernetes.Interface{l.down.Client()} })
	return l
}

// section is a rancher section for l with these tiers.
func (l *lab) section(admins, users []any) map[string]any {
	return map[string]any{"url": l.rancher.URL, "token": l.rancher.Token, "ca_file": "rancher-ca.pem", "admins": admins, "users": users}
}

// run runs a hook of tc-rancher on l's cluster directory.
func (l *lab) run(t *testing.T, sec map[string]any, args ...string) (int, state.Section, string) {
	t.Helper()
	return harness().Run(t, l.dir, sec, args...)
}

// converge runs converge and fails the test unless it succeeds.
func (l *lab) converge(t *testing.T, sec map[string]any) state.Section {
	t.Helper()
	code, out, stderr := l.run(t, sec, "converge")
	if code != 0 || out.Status != state.StatusSucceeded {
		t.Fatalf("converge: exit %d, %+v\n%s", code, out, stderr)
	}
	return out
}

// clusterID is the id converge published.
func clusterID(t *testing.T, sec state.Section) string {
	t.Helper()
	var out struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := json.Unmarshal(sec.Outputs, &out); err != nil || out.ClusterID == "" {
		t.Fatalf("outputs %s: %v", sec.Outputs, err)
	}
	return out.ClusterID
}

// bindings are the cluster's bindings as "role principal" pairs.
func (l *lab) bindings(id string) []string {
	var out []string
	for _, b := range l.rancher.Bindings() {
		if b.ClusterID == id {
			out = append(out, b.RoleTemplateID+" "+b.UserPrincipalID+b.GroupPrincipalID)
		}
	}
	slices.Sort(out)
	return out
}

// principal is the id of the lab user login.
func (l *lab) principal(t *testing.T, login string) string {
	t.Helper()
	for _, u := range l.rancher.Users() {
		if u.Username == login {
			return u.PrincipalID
		}
	}
	t.Fatalf("no lab user %s", login)
	return ""
}

// connected waits until the cluster's agent has connected and Rancher has
// redeployed it with the cluster's id.
func (l *lab) connected(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, data, err := rancher.AgentCredentials(t.Context(), l.down.Client())
		if err == nil && string(data["namespace"]) == id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent of %s never connected: %v", id, err)
		}
	}
}

// api calls the lab Rancher as its admin, as someone acting by hand.
func (l *lab) api(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, l.rancher.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.rancher.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.rancher.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}
