package rancher_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/rancher"
)

func labUsers() rancher.Options {
	return rancher.Options{
		Users: []rancher.User{
			{Username: "alice", DisplayName: "Alice Liddell", PrincipalID: "local://u-abc12"},
			{Username: "alicia"},
			{Username: "bob", DisplayName: "Bob"},
		},
		Groups: []rancher.Group{{Name: "alice-fans", PrincipalID: "openldap_group://cn=alice-fans"}},
	}
}

// search runs the principals search action and returns "type:id" rows.
func search(t *testing.T, s *rancher.Server, body map[string]any) []string {
	t.Helper()
	code, coll := api(t, s, http.MethodPost, "/v3/principals?action=search", body)
	if code != http.StatusOK {
		t.Fatalf("search %v: %d %v", body, code, coll)
	}
	var out []string
	for _, p := range data(t, coll) {
		if p["type"] != "principal" {
			t.Errorf("row type %v", p["type"])
		}
		out = append(out, p["principalType"].(string)+":"+p["loginName"].(string)+":"+p["id"].(string))
	}
	return out
}

func TestPrincipalSearch(t *testing.T) {
	t.Parallel()
	s := start(t, labUsers())
	users := s.Users()
	if users[0].PrincipalID != "local://u-abc12" || !slices.ContainsFunc(users, func(u rancher.User) bool {
		return u.Username == "alicia" && len(u.PrincipalID) == len("local://u-abc12")
	}) {
		t.Fatalf("Users() = %v", users)
	}
	alicia := users[1].PrincipalID
	// A prefix search, like Rancher's: groups and look-alike users too, so
	// the client must filter for an exact user (RA-5).
	want := []string{"user:alice:local://u-abc12", "user:alicia:" + alicia, "group::openldap_group://cn=alice-fans"}
	if diff := cmp.Diff(want, search(t, s, map[string]any{"name": "ali"})); diff != "" {
		t.Errorf("search ali (-want +got):\n%s", diff)
	}
	want = []string{"user:alice:local://u-abc12", "group::openldap_group://cn=alice-fans"}
	if diff := cmp.Diff(want, search(t, s, map[string]any{"name": "ALICE"})); diff != "" {
		t.Errorf("search ALICE (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user:alice:local://u-abc12"}, search(t, s, map[string]any{"name": "alice", "principalType": "user"})); diff != "" {
		t.Errorf("user-only search (-want +got):\n%s", diff)
	}
	if got := search(t, s, map[string]any{"name": "Alice Lid"}); len(got) != 1 {
		t.Errorf("display-name search: %v", got)
	}
	for _, stem := range []string{"carol", ""} {
		if got := search(t, s, map[string]any{"name": stem}); len(got) != 0 {
			t.Errorf("search %q: %v", stem, got)
		}
	}
	if code, e := api(t, s, http.MethodPost, "/v3/principals?action=nope", map[string]any{}); code != http.StatusNotFound || e["type"] != "error" {
		t.Errorf("unknown action: %d %v", code, e)
	}
}

func TestBindings(t *testing.T) {
	t.Parallel()
	s := start(t, labUsers())
	id := importCluster(t, s, "lab")
	other := importCluster(t, s, "other")
	list := func() []map[string]any {
		_, coll := api(t, s, http.MethodGet, "/v3/clusterroletemplatebindings?clusterId="+id, nil)
		return data(t, coll)
	}
	rows := list()
	if len(rows) != 1 || rows[0]["id"] != id+":"+rancher.CreatorBindingName || rows[0]["userPrincipalId"] != s.AdminPrincipalID || rows[0]["roleTemplateId"] != "cluster-owner" {
		t.Fatalf("bindings of a new cluster: %v", rows)
	}
	add := func(body map[string]any) (int, map[string]any) {
		return api(t, s, http.MethodPost, "/v3/clusterroletemplatebindings", body)
	}
	code, b := add(map[string]any{"type": "clusterRoleTemplateBinding", "clusterId": id, "userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"})
	if code != http.StatusCreated || b["type"] != "clusterRoleTemplateBinding" || b["userId"] != "u-abc12" || b["groupPrincipalId"] != nil {
		t.Fatalf("add: %d %v", code, b)
	}
	if code, _ := add(map[string]any{"clusterId": id, "groupPrincipalId": "openldap_group://cn=alice-fans", "roleTemplateId": "cluster-member"}); code != http.StatusCreated {
		t.Errorf("group binding: %d", code)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}, 409, "AlreadyExists"},
		{map[string]any{"userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}, 422, "MissingRequired"},
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-abc12"}, 422, "MissingRequired"},
		{map[string]any{"clusterId": id, "roleTemplateId": "cluster-member"}, 422, "InvalidBodyContent"},
		{map[string]any{"clusterId": "c-zzzzz", "userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}, 422, "InvalidReference"},
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-abc12", "roleTemplateId": "god"}, 422, "InvalidReference"},
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-nobody", "roleTemplateId": "cluster-member"}, 422, "InvalidReference"},
	} {
		if code, e := add(tc.body); code != tc.status || e["code"] != tc.code || e["status"] != float64(tc.status) {
			t.Errorf("add %v: %d %v, want %d %s", tc.body, code, e, tc.status, tc.code)
		}
	}
	if len(list()) != 3 {
		t.Errorf("bindings of %s: %v", id, list())
	}
	_, all := api(t, s, http.MethodGet, "/v3/clusterroletemplatebindings", nil)
	if rows := data(t, all); len(rows) != 4 || !slices.ContainsFunc(rows, func(r map[string]any) bool { return r["clusterId"] == other }) {
		t.Errorf("all bindings: %v", rows)
	}
	bid := b["id"].(string)
	if code, got := api(t, s, http.MethodGet, "/v3/clusterroletemplatebindings/"+bid, nil); code != http.StatusOK || got["id"] != bid {
		t.Errorf("get binding: %d %v", code, got)
	}
	if code, _ := api(t, s, http.MethodDelete, "/v3/clusterroletemplatebindings/"+bid, nil); code != http.StatusOK {
		t.Errorf("delete: %d", code)
	}
	if code, e := api(t, s, http.MethodDelete, "/v3/clusterroletemplatebindings/"+bid, nil); code != http.StatusNotFound || e["code"] != "NotFound" {
		t.Errorf("second delete: %d %v", code, e)
	}
	var got []string
	for _, x := range s.Bindings() {
		if x.ClusterID == id {
			got = append(got, x.RoleTemplateID+":"+x.UserPrincipalID+x.GroupPrincipalID)
		}
	}
	want := []string{"cluster-owner:" + s.AdminPrincipalID, "cluster-member:openldap_group://cn=alice-fans"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Bindings() (-want +got):\n%s", diff)
	}
}

// TestScriptedErrorBodies lets the plugin's RA-11 parsing meet Rancher's
// other error shapes: list messages and errors[].
func TestScriptedErrorBodies(t *testing.T) {
	t.Parallel()
	s := start(t, rancher.Options{})
	body := map[string]any{
		"type": "error", "status": 422, "code": "InvalidFormat",
		"message": []any{"first", "second"}, "errors": []any{map[string]any{"message": "third"}},
	}
	s.ScriptError(http.MethodPost, "/v3/clusters", 422, body)
	code, got := api(t, s, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "x"})
	if code != 422 || !cmp.Equal(map[string]any{
		"type": "error", "status": float64(422), "code": "InvalidFormat",
		"message": []any{"first", "second"}, "errors": []any{map[string]any{"message": "third"}},
	}, got) {
		t.Errorf("scripted: %d %v", code, got)
	}
	if code, _ := api(t, s, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": "x"}); code != http.StatusCreated {
		t.Errorf("the script is one-shot; next create: %d", code)
	}
}

func TestFaultKnobs(t *testing.T) {
	t.Parallel()
	rec := &labnet.Recorder{}
	inj := labnet.NewInjector(labnet.Knobs{Latency: 20 * time.Millisecond, Faults: []labnet.Fault{
		{Service: rancher.Service, Method: http.MethodPost, PathPrefix: "/v3/clusters", Nth: 2, Status: 503},
		{Service: rancher.Service, Method: http.MethodDelete, Hang: true},
	}})
	o := labUsers()
	o.Injector, o.Recorder = inj, rec
	s := start(t, o)
	begin := time.Now()
	importCluster(t, s, "one")
	if time.Since(begin) < 20*time.Millisecond {
		t.Error("latency was not applied")
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/v3/clusters", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second create: %d, want the injected 503", resp.StatusCode)
	}
	importCluster(t, s, "three")
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodDelete, s.URL+"/v3/clusters/c-x", nil)
	if resp, err := s.Client().Do(req); err == nil {
		_ = resp.Body.Close()
		t.Error("DELETE answered despite the hang fault")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DELETE: %v", err)
	}
	counts := rec.Counts(func(c labnet.Call) string { return c.Service + " " + c.Method + " " + c.Path })
	if counts["rancher POST /v3/clusters"] != 3 {
		t.Errorf("recorded %v", counts)
	}
	sawFault := slices.ContainsFunc(rec.Calls(), func(c labnet.Call) bool { return c.Status == http.StatusServiceUnavailable })
	if !sawFault || !slices.Equal(rec.Services(), []string{rancher.Service}) {
		t.Errorf("recorder: services %v, 503 recorded %t", rec.Services(), sawFault)
	}
}
