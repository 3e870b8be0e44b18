package tcrancher

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/rancherapi"
)

// TestRA4_Decide is the identity table: the Rancher cluster of this name
// is reused only when the downstream agent proves it this cluster's, or,
// pending with no agent anywhere, when it carries talosc's marker for
// this cluster (RA-12).
func TestRA4_Decide(t *testing.T) {
	t.Parallel()
	const url = "https://rancher.lab"
	pending := &rancherapi.Cluster{ID: "c-aaaaa", Name: "demo"}
	marked := func(identity string) *rancherapi.Cluster {
		return &rancherapi.Cluster{
			ID: "c-aaaaa", Name: "demo", Labels: map[string]string{rancherapi.ManagedByLabel: rancherapi.ManagedBy},
			Annotations: map[string]string{rancherapi.IdentityAnnotation: identity},
		}
	}
	active := &rancherapi.Cluster{ID: "c-aaaaa", Name: "demo", Driver: "imported", Conditions: []rancherapi.Condition{{Type: "Connected", Status: "True"}}}
	ours := rancherapi.Agent{Installed: true, URL: url, ClusterID: "c-aaaaa"}
	registered := rancherapi.Agent{Installed: true, URL: url + "/"}
	other := rancherapi.Agent{Installed: true, URL: url, ClusterID: "c-bbbbb"}
	elsewhere := rancherapi.Agent{Installed: true, URL: "https://other.lab", ClusterID: "c-aaaaa"}
	for _, tc := range []struct {
		name    string
		cluster *rancherapi.Cluster
		agent   rancherapi.Agent
		token   bool
		want    verdict
	}{
		{"nothing anywhere", nil, rancherapi.Agent{}, false, importNew},
		{"pending, no agent", pending, rancherapi.Agent{}, false, mismatch},
		{"pending, talosc's for this cluster, no agent", marked("id-this"), rancherapi.Agent{}, false, resumeImport},
		{"pending, talosc's for an earlier cluster, no agent", marked("id-earlier"), rancherapi.Agent{}, false, mismatch},
		{"pending, talosc's label without an identity, no agent", marked(""), rancherapi.Agent{}, false, mismatch},
		{"connected elsewhere, no agent here", active, rancherapi.Agent{}, false, mismatch},
		{"agent with the cluster's id", active, ours, false, attached},
		{"agent registered with one of its tokens", pending, registered, true, attached},
		{"agent registered with another cluster's token", pending, registered, false, mismatch},
		{"agent of another cluster id", active, other, false, mismatch},
		{"agent of another Rancher", active, elsewhere, false, foreignAgent},
		{"agent of another Rancher, no cluster here", nil, elsewhere, false, foreignAgent},
		{"agent of this Rancher, no cluster", nil, ours, false, orphanAgent},
		{"registered agent, no cluster", nil, registered, false, orphanAgent},
	} {
		o := observed{name: "demo", url: url, cluster: tc.cluster, agent: tc.agent, tokenOfCluster: tc.token, identity: "id-this"}
		if got, why := o.decide(); got != tc.want || (got >= mismatch) != (why != "") {
			t.Errorf("%s: %d %q, want %d", tc.name, got, why, tc.want)
		}
	}
}

// TestRA7_Reconcile is the binding table.
func TestRA7_Reconcile(t *testing.T) {
	t.Parallel()
	b := func(name, principal, role string) rancherapi.Binding {
		return rancherapi.Binding{ID: "c:" + name, Name: name, UserPrincipalID: principal, RoleTemplateID: role}
	}
	creator := b("creator-cluster-owner", "local://user-a", roleOwner)
	creator.Annotations = map[string]string{creatorAnnotation: "true"}
	grb := b("crtb-grb-x", "local://u-dave", roleOwner)
	grb.Labels = map[string]string{grbOwnerLabel: "grb-x"}
	group := rancherapi.Binding{ID: "c:g", Name: "crtb-g", GroupPrincipalID: "openldap_group://ops", RoleTemplateID: roleMember}
	existing := []rancherapi.Binding{
		creator, grb, group, b("crtb-1", "u-alice", roleOwner), b("crtb-2", "u-alice", roleOwner),
		b("crtb-3", "u-bob", roleMember), b("crtb-4", "u-carol", "projects-view"),
	}
	desired := map[binding][]string{
		{principal: "u-alice", role: roleOwner}:        {"alice"},
		{principal: "u-bob", role: roleOwner}:          {"bob"},
		{principal: "local://user-a", role: roleOwner}: {"admin"},
	}
	ch := reconcile(desired, existing)
	if len(ch.add) != 1 || ch.add[0] != (binding{principal: "u-bob", role: roleOwner}) {
		t.Errorf("add %v, want bob as owner", ch.add)
	}
	var removed []string
	for _, x := range ch.remove {
		removed = append(removed, x.Name)
	}
	if len(removed) != 2 || removed[0] != "crtb-2" || removed[1] != "crtb-3" {
		t.Errorf("remove %v, want alice's duplicate and bob's member binding", removed)
	}
}

// TestPick_DuplicatesOfALateCreate: several Rancher clusters of this name
// are resolved only when each carries talosc's marker for this cluster:
// the one in use (connected) is kept and the unused ones are dropped; two
// in use, or one not talosc's for this cluster, are refused naming them.
func TestPick_DuplicatesOfALateCreate(t *testing.T) {
	t.Parallel()
	ours := func(id string, connected bool) rancherapi.Cluster {
		c := rancherapi.Cluster{
			ID: id, Name: "demo", Labels: map[string]string{rancherapi.ManagedByLabel: rancherapi.ManagedBy},
			Annotations: map[string]string{rancherapi.IdentityAnnotation: "id-this"},
		}
		if connected {
			c.Driver = "imported"
		}
		return c
	}
	foreign := rancherapi.Cluster{ID: "c-ccccc", Name: "demo"}
	o := observed{name: "demo", identity: "id-this"}
	s := &session{}
	keep, drop, err := s.pick(t.Context(), o, []rancherapi.Cluster{ours("c-aaaaa", false), ours("c-bbbbb", true)})
	if err != nil || keep.ID != "c-bbbbb" || len(drop) != 1 || drop[0].ID != "c-aaaaa" {
		t.Errorf("one connected, one pending: keep %v, drop %v, %v; want c-bbbbb kept, c-aaaaa dropped", keep, drop, err)
	}
	if _, _, err := s.pick(t.Context(), o, []rancherapi.Cluster{ours("c-aaaaa", true), ours("c-bbbbb", true)}); err == nil || !strings.Contains(err.Error(), "c-aaaaa, c-bbbbb") {
		t.Errorf("two in use: %v, want both named", err)
	}
	if _, _, err := s.pick(t.Context(), o, []rancherapi.Cluster{ours("c-aaaaa", false), foreign}); err == nil || !strings.Contains(err.Error(), "2 clusters are named \"demo\" (c-aaaaa, c-ccccc)") {
		t.Errorf("one not ours: %v, want a refusal naming both", err)
	}
}
