package tcrancher_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/rancher"
)

// TestRA5_ExactPrincipalsOnly: under each auth provider the lab answers
// as, alice binds alice and never alicia (a prefix match), bob never
// bobby, carol@example.edu binds carol; a name no principal is exactly is
// refused, naming it, before any binding changes.
func TestRA5_ExactPrincipalsOnly(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{rancher.ProviderLocal, rancher.ProviderOpenLDAP, rancher.ProviderShibboleth} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, provider)
			id := clusterID(t, l.converge(t, l.section([]any{"alice"}, []any{"bob", "carol@example.edu"})))
			want := []string{
				"cluster-member " + l.principal(t, "bob"), "cluster-member " + l.principal(t, "carol"),
				"cluster-owner " + l.principal(t, "alice"), "cluster-owner " + l.principal(t, "dave"), "cluster-owner " + l.rancher.AdminPrincipalID,
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, l.bindings(id)); diff != "" {
				t.Errorf("bindings (-want +got):\n%s", diff)
			}
			code, out, _ := l.run(t, l.section([]any{"alice"}, []any{"bob", "alise"}), "converge")
			if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, "could not resolve Rancher principals for configured member(s): 'alise' (tier users)") {
				t.Errorf("a misspelt name: exit %d, %+v", code, out)
			}
			if diff := cmp.Diff(want, l.bindings(id)); diff != "" {
				t.Errorf("bindings changed on a refusal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRA6_OnePrincipalInTwoTiers is refused by converge and check before
// anything changes: not even the import happens.
func TestRA6_OnePrincipalInTwoTiers(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderLocal)
	sec := l.section([]any{"carol"}, []any{"carol@example.edu"})
	code, out, _ := l.run(t, sec, "converge")
	if code != 1 || out.Error == nil || !strings.Contains(out.Error.Message, "configured members of different tiers are one Rancher principal: 'carol' (tier admins) and 'carol@example.edu' (tier users)") {
		t.Errorf("converge: exit %d, %+v", code, out)
	}
	if got := l.rancher.Clusters(); len(got) != 0 {
		t.Errorf("Rancher clusters after the refusal: %v", got)
	}
	_, check, _ := l.run(t, sec, "check")
	var r struct {
		OK         bool   `json:"ok"`
		Unresolved string `json:"unresolved"`
	}
	if err := json.Unmarshal(check.Outputs, &r); err != nil || r.OK || !strings.Contains(r.Unresolved, "one Rancher principal") {
		t.Errorf("check: %s, %v", check.Outputs, err)
	}
}

// TestRA7_ReconcileChangesExactlyTheMovedMembers: moving bob from users to
// admins and removing carol changes exactly those bindings, and a
// duplicate of alice's is removed; the creator's, the global owner's, a
// group's and another role's bindings are kept.
func TestRA7_ReconcileChangesExactlyTheMovedMembers(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderOpenLDAP)
	id := clusterID(t, l.converge(t, l.section([]any{"alice"}, []any{"bob", "carol"})))
	alice, bob, carol, alicia := l.principal(t, "alice"), l.principal(t, "bob"), l.principal(t, "carol"), l.principal(t, "alicia")
	for _, by := range []map[string]any{
		{"clusterId": id, "groupPrincipalId": "openldap_group://cn=ops,dc=lab", "roleTemplateId": "cluster-member"},
		{"clusterId": id, "userPrincipalId": alicia, "roleTemplateId": "projects-view"},
		{"clusterId": id, "userPrincipalId": alice, "roleTemplateId": "cluster-owner"},
	} {
		l.api(t, http.MethodPost, "/v3/clusterroletemplatebindings", by)
	}
	before := l.bindings(id)
	out := l.converge(t, l.section([]any{"alice", "bob"}, nil))
	after := l.bindings(id)
	want := slices.Clone(before)
	want = slices.DeleteFunc(want, func(b string) bool { return b == "cluster-member "+bob || b == "cluster-member "+carol })
	want = slices.Delete(want, slices.Index(want, "cluster-owner "+alice), slices.Index(want, "cluster-owner "+alice)+1)
	want = append(want, "cluster-owner "+bob)
	slices.Sort(want)
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("bindings (-want +got):\n%s\nplan: %v", diff, out.Plan)
	}
	for _, keep := range []string{
		"cluster-owner " + l.rancher.AdminPrincipalID, "cluster-owner " + l.principal(t, "dave"),
		"cluster-member openldap_group://cn=ops,dc=lab", "projects-view " + alicia,
	} {
		if !slices.Contains(after, keep) {
			t.Errorf("the binding %q Rancher or a person made was not kept: %v", keep, after)
		}
	}
	if n := len(out.Plan); n != 4 {
		t.Errorf("%d changes, want 4 (add bob as owner; remove bob and carol as members, alice's duplicate): %v", n, out.Plan)
	}
}

// TestRA8_RA9_StatusAndCheck: converge publishes {cluster_id, url,
// members}; check reports every RA-9 field and is ok once the agent runs;
// a binding removed by hand makes it not ok, naming what differs.
func TestRA8_RA9_StatusAndCheck(t *testing.T) {
	t.Parallel()
	l := newLab(t, rancher.ProviderShibboleth)
	sec := l.section([]any{"alice"}, []any{"bob"})
	out := l.converge(t, sec)
	var pub struct {
		ClusterID string              `json:"cluster_id"`
		URL       string              `json:"url"`
		Members   map[string][]string `json:"members"`
	}
	if err := json.Unmarshal(out.Outputs, &pub); err != nil || pub.URL != l.rancher.URL ||
		!cmp.Equal(pub.Members, map[string][]string{"admins": {"shibboleth_user://alice"}, "users": {"shibboleth_user://bob"}}) {
		t.Fatalf("outputs %s: %v", out.Outputs, err)
	}
	l.connected(t, pub.ClusterID)
	report := func(hook string) map[string]any {
		t.Helper()
		code, sec, stderr := l.run(t, sec, hook)
		var r map[string]any
		if err := json.Unmarshal(sec.Outputs, &r); code != 0 || err != nil {
			t.Fatalf("%s: exit %d, %s, %v\n%s", hook, code, sec.Outputs, err, stderr)
		}
		return r
	}
	r := report("check")
	for key, want := range map[string]any{
		"ok": true, "registered": true, "cluster_id": pub.ClusterID, "downstream_id": pub.ClusterID, "agent_installed": true,
		"connected": true, "id_match": true, "id_mismatch_reason": "", "orphan_reason": "", "bindings_in_sync": true,
	} {
		if r[key] != want {
			t.Errorf("check %s = %v, want %v (%v)", key, r[key], want, r)
		}
	}
	if s := report("status"); s["cluster_id"] != pub.ClusterID || s["members"] == nil {
		t.Errorf("status: %v", s)
	}
	for _, b := range l.rancher.Bindings() {
		if b.ClusterID == pub.ClusterID && b.UserPrincipalID == "shibboleth_user://bob" {
			l.api(t, http.MethodDelete, "/v3/clusterroletemplatebindings/"+b.ID, nil)
		}
	}
	if r := report("check"); r["ok"] != false || !strings.Contains(r["reason"].(string), "1 missing, 0 stale") {
		t.Errorf("check after a binding went: %v", r)
	}
}
