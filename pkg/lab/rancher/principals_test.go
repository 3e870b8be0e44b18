package rancher_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/rancher"
)

// labUsers are users whose names trip up a prefix search: alice and
// alicia, bob and bobby; dave is a global owner.
func labUsers() rancher.Options {
	return rancher.Options{
		Users: []rancher.User{
			{Username: "alice", DisplayName: "Alice Liddell", PrincipalID: "local://u-abc12"},
			{Username: "alicia"},
			{Username: "bob", DisplayName: "Bob"},
			{Username: "bobby", DisplayName: "Robert Tables"},
			{Username: "dave", GlobalOwner: true},
		},
		Groups: []rancher.Group{{Name: "alice-fans", PrincipalID: "openldap_group://cn=alice-fans,ou=groups,dc=lab"}},
	}
}

// search runs the principals search action and returns
// "type:loginName:id" rows.
func search(t *testing.T, s *rancher.Server, body map[string]any) []string {
	t.Helper()
	code, coll := api(t, s, http.MethodPost, "/v3/principals?action=search", body)
	if code != http.StatusOK {
		t.Fatalf("search %v: %d %v", body, code, coll)
	}
	var out []string
	for _, p := range data(t, coll) {
		if p["type"] != "principal" || p["extraInfo"] == nil {
			t.Errorf("row %v", p)
		}
		out = append(out, p["principalType"].(string)+":"+p["loginName"].(string)+":"+p["id"].(string))
	}
	return out
}

// TestPrincipalSearchLocal: under local auth ids are local://u-xxxxx,
// whose stem is never the username; a query of up to six characters
// matches prefixes of two or more, a longer one substrings; the token's
// admin is a user like any other; there are no groups.
func TestPrincipalSearchLocal(t *testing.T) {
	t.Parallel()
	s := start(t, labUsers())
	users := s.Users()
	if users[0].PrincipalID != "local://u-abc12" || !regexp.MustCompile(`^local://u-[a-z0-9]{5}$`).MatchString(users[1].PrincipalID) {
		t.Fatalf("Users() = %v", users)
	}
	alicia, bobby := users[1].PrincipalID, users[3].PrincipalID
	for q, want := range map[string][]string{
		"ali":        {"user:alice:local://u-abc12", "user:alicia:" + alicia},
		"ALICE":      {"user:alice:local://u-abc12"},
		"liddell":    {"user:alice:local://u-abc12"}, // a word of the display name
		"bob":        {"user:bob:" + users[2].PrincipalID, "user:bobby:" + bobby},
		"tables":     {"user:bobby:" + bobby},
		"ert tables": {"user:bobby:" + bobby}, // longer than six: a substring
		"a":          nil,                     // one character: no index entry
		"carol":      nil,
		"admin":      {"user:admin:" + s.AdminPrincipalID},
	} {
		if diff := cmp.Diff(want, search(t, s, map[string]any{"name": q})); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", q, diff)
		}
	}
}

// TestPrincipalSearchLDAP: OpenLDAP and Shibboleth-with-LDAP answer a
// prefix search with their own id shapes (a DN; the login), groups
// included, and append the local users that match (the admin).
func TestPrincipalSearchLDAP(t *testing.T) {
	t.Parallel()
	for provider, alice := range map[string]string{
		rancher.ProviderOpenLDAP:   "openldap_user://uid=alice,ou=users,dc=lab",
		rancher.ProviderShibboleth: "shibboleth_user://alice",
	} {
		o := labUsers()
		o.Provider = provider
		o.Users[0].PrincipalID = ""
		s := start(t, o)
		want := []string{"user:alice:" + alice, "user:alicia:" + s.Users()[1].PrincipalID, "group::openldap_group://cn=alice-fans,ou=groups,dc=lab"}
		if diff := cmp.Diff(want, search(t, s, map[string]any{"name": "ali"})); diff != "" {
			t.Errorf("%s: search ali (-want +got):\n%s", provider, diff)
		}
		if diff := cmp.Diff(want[:1], search(t, s, map[string]any{"name": "alice", "principalType": "user"})); diff != "" {
			t.Errorf("%s: user search (-want +got):\n%s", provider, diff)
		}
		if got := search(t, s, map[string]any{"name": "adm"}); !slices.Equal(got, []string{"user:admin:" + s.AdminPrincipalID}) {
			t.Errorf("%s: local users appended: %v", provider, got)
		}
	}
	if _, err := rancher.Start(t.Context(), rancher.Options{Provider: "github"}); err == nil {
		t.Error("an unknown provider was accepted")
	}
}

// TestBindings: a new cluster has its creator's binding (annotated) and a
// global owner's crtb-grb-* binding (labelled, and recreated when
// deleted); identical bindings may coexist, as on Rancher 2.8–2.14; an
// unknown principal is accepted with a user made for it; an unknown role
// template is a 500.
func TestBindings(t *testing.T) {
	t.Parallel()
	s := start(t, labUsers())
	id := importCluster(t, s, "lab")
	list := func() []map[string]any {
		_, coll := api(t, s, http.MethodGet, "/v3/clusterroletemplatebindings?clusterId="+id, nil)
		return data(t, coll)
	}
	rows := list()
	if len(rows) != 2 || rows[0]["id"] != id+":"+rancher.CreatorBindingName || rows[0]["userPrincipalId"] != s.AdminPrincipalID ||
		rows[0]["annotations"].(map[string]any)[rancher.CreatorBindingAnnotation] != "true" || rows[0]["namespaceId"] != nil {
		t.Fatalf("bindings of a new cluster: %v", rows)
	}
	grb := rows[1]
	if !strings.HasPrefix(grb["name"].(string), "crtb-grb-") || grb["labels"].(map[string]any)[rancher.GlobalRoleOwnerLabel] == nil {
		t.Fatalf("global owner's binding: %v", grb)
	}
	add := func(body map[string]any) (int, map[string]any) {
		return api(t, s, http.MethodPost, "/v3/clusterroletemplatebindings", body)
	}
	member := map[string]any{"type": "clusterRoleTemplateBinding", "clusterId": id, "userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}
	code, b := add(member)
	if code != http.StatusCreated || b["userId"] != "u-abc12" || b["groupPrincipalId"] != nil {
		t.Fatalf("add: %d %v", code, b)
	}
	if code, twin := add(member); code != http.StatusCreated || twin["id"] == b["id"] {
		t.Errorf("an identical binding: %d %v", code, twin)
	}
	if code, x := add(map[string]any{"clusterId": id, "userPrincipalId": "openldap_user://uid=nobody", "roleTemplateId": "cluster-member"}); code != http.StatusCreated ||
		!regexp.MustCompile(`^u-[a-z0-9]{10}$`).MatchString(x["userId"].(string)) {
		t.Errorf("unknown principal: %d %v", code, x)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}, 422, "MissingRequired"},
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-abc12"}, 422, "MissingRequired"},
		{map[string]any{"clusterId": id, "roleTemplateId": "cluster-member"}, 422, "InvalidBodyContent"},
		{map[string]any{"clusterId": "c-zzzzz", "userPrincipalId": "local://u-abc12", "roleTemplateId": "cluster-member"}, 404, "NotFound"},
		{map[string]any{"clusterId": id, "userPrincipalId": "local://u-abc12", "roleTemplateId": "god"}, 500, "ServerError"},
	} {
		if code, e := add(tc.body); code != tc.status || e["code"] != tc.code || e["status"] != float64(tc.status) {
			t.Errorf("add %v: %d %v, want %d %s", tc.body, code, e, tc.status, tc.code)
		}
	}
	if n := len(list()); n != 5 {
		t.Errorf("%d bindings of %s, want 5", n, id)
	}
	bid := b["id"].(string)
	if code, got := api(t, s, http.MethodGet, "/v3/clusterroletemplatebindings/"+bid, nil); code != http.StatusOK || got["id"] != bid {
		t.Errorf("get binding: %d %v", code, got)
	}
	for _, del := range []string{bid, grb["id"].(string)} {
		if code, _ := api(t, s, http.MethodDelete, "/v3/clusterroletemplatebindings/"+del, nil); code != http.StatusOK {
			t.Errorf("delete %s: %d", del, code)
		}
		if code, e := api(t, s, http.MethodDelete, "/v3/clusterroletemplatebindings/"+del, nil); code != http.StatusNotFound || e["code"] != "NotFound" {
			t.Errorf("second delete of %s: %d %v", del, code, e)
		}
	}
	back := slices.IndexFunc(list(), func(r map[string]any) bool {
		return strings.HasPrefix(r["name"].(string), "crtb-grb-") && r["id"] != grb["id"]
	})
	if back < 0 {
		t.Errorf("the global owner's binding was not recreated: %v", list())
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
