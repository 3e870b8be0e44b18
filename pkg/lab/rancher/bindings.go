package rancher

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// RoleTemplates are the cluster role template ids the lab knows.
func RoleTemplates() []string {
	return []string{"cluster-owner", "cluster-member", "projects-create", "projects-view", "nodes-view", "clusterroletemplatebindings-view"}
}

type binding struct {
	name, clusterID, userPrincipalID, groupPrincipalID, roleTemplateID, userID string
	labels, annotations                                                        map[string]string
	created                                                                    time.Time
}

// Binding is the inspection view of a cluster role template binding.
type Binding struct {
	ID, ClusterID, UserPrincipalID, GroupPrincipalID, RoleTemplateID string
	Labels, Annotations                                              map[string]string
}

func (b *binding) id() string { return b.clusterID + ":" + b.name }

// userFor is the Rancher user (u-xxxxx) of a principal: a local
// principal's own, or one made for an external principal, as the binding
// controller's EnsureUser does
// (R@v2.11.3:pkg/controllers/management/auth/crtb_handler.go:131-170).
// Callers hold s.mu.
func (s *Server) userFor(principal string) string {
	if id, ok := strings.CutPrefix(principal, "local://"); ok {
		return id
	}
	if id, ok := s.userIDs[principal]; ok {
		return id
	}
	id := "u-" + s.randID(10)
	s.userIDs[principal] = id
	return id
}

func (s *Server) bindingView(b *binding) map[string]any {
	v := map[string]any{
		"type": "clusterRoleTemplateBinding", "baseType": "clusterRoleTemplateBinding", "id": b.id(), "name": b.name,
		"namespaceId": nil, "clusterId": b.clusterID, "roleTemplateId": b.roleTemplateID,
		"userPrincipalId": nil, "groupPrincipalId": nil, "userId": nil, "groupId": nil,
		"labels": maps.Clone(b.labels), "annotations": maps.Clone(b.annotations),
		"created": b.created.UTC().Format(time.RFC3339), "createdTS": b.created.UnixMilli(),
		"links": map[string]any{
			"self":   s.URL + "/v3/clusterRoleTemplateBindings/" + b.id(),
			"remove": s.URL + "/v3/clusterRoleTemplateBindings/" + b.id(),
		},
	}
	if v["labels"] == nil {
		v["labels"] = map[string]string{}
	}
	if v["annotations"] == nil {
		v["annotations"] = map[string]string{}
	}
	if b.userPrincipalID != "" {
		v["userPrincipalId"], v["userId"] = b.userPrincipalID, b.userID
	}
	if b.groupPrincipalID != "" {
		v["groupPrincipalId"] = b.groupPrincipalID
	}
	return v
}

// globalRoleBindings gives c the crtb-grb-* binding of every GlobalOwner
// user (R@v2.11.3:pkg/controllers/management/auth/globalroles/globalrolebinding_handler.go:271-345).
// Callers hold s.mu.
func (s *Server) globalRoleBindings(c *cluster) {
	for _, u := range s.users {
		if u.GlobalOwner {
			s.bindings = append(s.bindings, &binding{
				name: "crtb-grb-" + s.randID(5), clusterID: c.id, userPrincipalID: u.PrincipalID, userID: s.userFor(u.PrincipalID),
				roleTemplateID: "cluster-owner", created: time.Now(),
				labels: map[string]string{GlobalRoleOwnerLabel: "grb-" + strings.TrimPrefix(s.userFor(u.PrincipalID), "u-")},
			})
		}
	}
}

func (s *Server) listBindings(cl *call) (any, error) {
	r := cl.r
	q := r.URL.Query()
	s.mu.Lock()
	var data []map[string]any
	for _, b := range s.bindings {
		if (!q.Has("clusterId") || q.Get("clusterId") == b.clusterID) &&
			(!q.Has("userPrincipalId") || q.Get("userPrincipalId") == b.userPrincipalID) &&
			(!q.Has("roleTemplateId") || q.Get("roleTemplateId") == b.roleTemplateID) {
			data = append(data, s.bindingView(b))
		}
	}
	s.mu.Unlock()
	return s.collection("clusterRoleTemplateBinding", "/v3/clusterroletemplatebindings", data), nil
}

// createBinding serves POST /v3/clusterroletemplatebindings as Rancher
// 2.8–2.14 does: an identical binding may exist twice (random crtb-
// names), an unknown principal is accepted (a user is made for it), an
// unknown role template is a 500
// (R@v2.11.3:pkg/api/norman/customization/roletemplatebinding/validator.go).
func (s *Server) createBinding(cl *call) (any, error) {
	var in struct {
		ClusterID        string `json:"clusterId"`
		UserPrincipalID  string `json:"userPrincipalId"`
		GroupPrincipalID string `json:"groupPrincipalId"`
		RoleTemplateID   string `json:"roleTemplateId"`
	}
	if err := cl.decode(&in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, clusterOK := s.clusters[in.ClusterID]
	switch {
	case in.ClusterID == "":
		return nil, norman(http.StatusUnprocessableEntity, "MissingRequired", "", "clusterId")
	case in.RoleTemplateID == "":
		return nil, norman(http.StatusUnprocessableEntity, "MissingRequired", "", "roleTemplateId")
	case (in.UserPrincipalID == "") == (in.GroupPrincipalID == ""):
		return nil, norman(http.StatusUnprocessableEntity, "InvalidBodyContent", "must target a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId]")
	case !slices.Contains(RoleTemplates(), in.RoleTemplateID):
		return nil, norman(http.StatusInternalServerError, "ServerError", `Error getting role template: roletemplates.management.cattle.io "`+in.RoleTemplateID+`" not found`)
	case !clusterOK || !c.removed.IsZero():
		return nil, notFound("namespaces", in.ClusterID)
	}
	b := &binding{
		name: "crtb-" + s.randID(5), clusterID: in.ClusterID, userPrincipalID: in.UserPrincipalID,
		groupPrincipalID: in.GroupPrincipalID, roleTemplateID: in.RoleTemplateID, created: time.Now(),
	}
	if b.userPrincipalID != "" {
		b.userID = s.userFor(b.userPrincipalID)
	}
	s.bindings = append(s.bindings, b)
	return created(s.bindingView(b)), nil
}

func (s *Server) findBinding(id string) int {
	return slices.IndexFunc(s.bindings, func(b *binding) bool { return b.id() == id })
}

func (s *Server) getBinding(cl *call) (any, error) {
	r := cl.r
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.findBinding(r.PathValue("id"))
	if i < 0 {
		return nil, notFound("clusterroletemplatebindings.management.cattle.io", r.PathValue("id"))
	}
	return s.bindingView(s.bindings[i]), nil
}

// deleteBinding serves DELETE: 200 with the object. A crtb-grb-* binding
// comes back at once under a new name: its GlobalRoleBinding's controller
// recreates it.
func (s *Server) deleteBinding(cl *call) (any, error) {
	r := cl.r
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.findBinding(r.PathValue("id"))
	if i < 0 {
		return nil, notFound("clusterroletemplatebindings.management.cattle.io", r.PathValue("id"))
	}
	b := s.bindings[i]
	v := s.bindingView(b)
	s.bindings = slices.Delete(s.bindings, i, i+1)
	if _, ok := b.labels[GlobalRoleOwnerLabel]; ok {
		again := *b
		again.name, again.created = "crtb-grb-"+s.randID(5), time.Now()
		s.bindings = append(s.bindings, &again)
	}
	return v, nil
}

// Bindings returns every cluster role template binding, oldest first.
func (s *Server) Bindings() []Binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(time.Now())
	var out []Binding
	for _, b := range s.bindings {
		out = append(out, Binding{
			ID: b.id(), ClusterID: b.clusterID, UserPrincipalID: b.userPrincipalID, GroupPrincipalID: b.groupPrincipalID,
			RoleTemplateID: b.roleTemplateID, Labels: maps.Clone(b.labels), Annotations: maps.Clone(b.annotations),
		})
	}
	return out
}
