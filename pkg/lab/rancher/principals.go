package rancher

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

func (s *Server) principalView(id, name, login, ptype string) map[string]any {
	provider, _, _ := strings.Cut(id, "://")
	provider = strings.TrimSuffix(strings.TrimSuffix(provider, "_user"), "_group")
	return map[string]any{
		"type": "principal", "baseType": "principal", "id": id, "name": name, "loginName": login,
		"principalType": ptype, "provider": provider, "me": id == s.AdminPrincipalID, "memberOf": false,
		"links": map[string]any{"self": s.URL + "/v3/principals/" + strings.ReplaceAll(id, "/", "%2F")},
	}
}

// principalsAction serves POST /v3/principals?action=search {"name": …}.
func (s *Server) principalsAction(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("action") != "search" {
		apiError(w, http.StatusNotFound, "NotFound", "invalid action: "+r.URL.Query().Get("action"))
		return
	}
	var in struct {
		Name          string `json:"name"`
		PrincipalType string `json:"principalType"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	q := strings.ToLower(in.Name)
	match := func(names ...string) bool {
		for _, n := range names {
			if q != "" && strings.HasPrefix(strings.ToLower(n), q) {
				return true
			}
		}
		return false
	}
	var data []map[string]any
	if in.PrincipalType == "" || in.PrincipalType == "user" {
		for _, u := range s.users {
			if match(u.Username, u.DisplayName) {
				data = append(data, s.principalView(u.PrincipalID, u.DisplayName, u.Username, "user"))
			}
		}
	}
	if in.PrincipalType == "" || in.PrincipalType == "group" {
		for _, g := range s.opts.Groups {
			if match(g.Name) {
				data = append(data, s.principalView(g.PrincipalID, g.Name, "", "group"))
			}
		}
	}
	writeJSON(w, http.StatusOK, s.collection("principal", "/v3/principals", data))
}

// Users returns the configured users with their principal ids.
func (s *Server) Users() []User { return slices.Clone(s.users) }

func (s *Server) knownPrincipal(id string, group bool) bool {
	if group {
		return slices.ContainsFunc(s.opts.Groups, func(g Group) bool { return g.PrincipalID == id })
	}
	return id == s.AdminPrincipalID || slices.ContainsFunc(s.users, func(u User) bool { return u.PrincipalID == id })
}

// RoleTemplates are the cluster role template ids the lab accepts.
func RoleTemplates() []string {
	return []string{"cluster-owner", "cluster-member", "projects-create", "projects-view", "nodes-view", "clusterroletemplatebindings-view"}
}

type binding struct {
	name, clusterID, userPrincipalID, groupPrincipalID, roleTemplateID string
	created                                                            time.Time
}

// Binding is the inspection view of a cluster role template binding.
type Binding struct {
	ID, ClusterID, UserPrincipalID, GroupPrincipalID, RoleTemplateID string
}

func (b *binding) id() string { return b.clusterID + ":" + b.name }

func (s *Server) bindingView(b *binding) map[string]any {
	v := map[string]any{
		"type": "clusterRoleTemplateBinding", "baseType": "clusterRoleTemplateBinding", "id": b.id(), "name": b.name,
		"namespaceId": b.clusterID, "clusterId": b.clusterID, "roleTemplateId": b.roleTemplateID,
		"userPrincipalId": nil, "groupPrincipalId": nil, "userId": nil, "groupId": nil,
		"created": b.created.UTC().Format(time.RFC3339), "createdTS": b.created.UnixMilli(),
		"links": map[string]any{
			"self":   s.URL + "/v3/clusterRoleTemplateBindings/" + b.id(),
			"remove": s.URL + "/v3/clusterRoleTemplateBindings/" + b.id(),
		},
	}
	if b.userPrincipalID != "" {
		v["userPrincipalId"] = b.userPrincipalID
		_, uid, _ := strings.Cut(b.userPrincipalID, "://")
		v["userId"] = uid
	}
	if b.groupPrincipalID != "" {
		v["groupPrincipalId"] = b.groupPrincipalID
	}
	return v
}

func (s *Server) listBindings(w http.ResponseWriter, r *http.Request) {
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
	writeJSON(w, http.StatusOK, s.collection("clusterRoleTemplateBinding", "/v3/clusterroletemplatebindings", data))
}

func (s *Server) createBinding(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ClusterID        string `json:"clusterId"`
		UserPrincipalID  string `json:"userPrincipalId"`
		GroupPrincipalID string `json:"groupPrincipalId"`
		RoleTemplateID   string `json:"roleTemplateId"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, clusterOK := s.clusters[in.ClusterID]
	switch {
	case in.ClusterID == "":
		apiError(w, http.StatusUnprocessableEntity, "MissingRequired", "missing required clusterId", "clusterId")
	case in.RoleTemplateID == "":
		apiError(w, http.StatusUnprocessableEntity, "MissingRequired", "missing required roleTemplateId", "roleTemplateId")
	case (in.UserPrincipalID == "") == (in.GroupPrincipalID == ""):
		apiError(w, http.StatusUnprocessableEntity, "InvalidBodyContent", "binding must target a user [userId]/[userPrincipalId] OR a group [groupId]/[groupPrincipalId]")
	case !clusterOK:
		apiError(w, http.StatusUnprocessableEntity, "InvalidReference", "invalid reference for clusterId", "clusterId")
	case !slices.Contains(RoleTemplates(), in.RoleTemplateID):
		apiError(w, http.StatusUnprocessableEntity, "InvalidReference", "invalid reference for roleTemplateId", "roleTemplateId")
	case !s.knownPrincipal(in.UserPrincipalID+in.GroupPrincipalID, in.GroupPrincipalID != ""):
		apiError(w, http.StatusUnprocessableEntity, "InvalidReference", "principal "+in.UserPrincipalID+in.GroupPrincipalID+" not found")
	default:
		for _, b := range s.bindings {
			if b.clusterID == in.ClusterID && b.roleTemplateID == in.RoleTemplateID && b.userPrincipalID == in.UserPrincipalID && b.groupPrincipalID == in.GroupPrincipalID {
				apiError(w, http.StatusConflict, "AlreadyExists", "clusterroletemplatebindings.management.cattle.io \""+b.name+"\" already exists")
				return
			}
		}
		b := &binding{
			name: "crtb-" + s.randID(5), clusterID: in.ClusterID, userPrincipalID: in.UserPrincipalID,
			groupPrincipalID: in.GroupPrincipalID, roleTemplateID: in.RoleTemplateID, created: time.Now(),
		}
		s.bindings = append(s.bindings, b)
		writeJSON(w, http.StatusCreated, s.bindingView(b))
	}
}

func (s *Server) findBinding(id string) int {
	return slices.IndexFunc(s.bindings, func(b *binding) bool { return b.id() == id })
}

func (s *Server) getBinding(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.findBinding(r.PathValue("id"))
	if i < 0 {
		notFound(w, "clusterroletemplatebindings.management.cattle.io", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, s.bindingView(s.bindings[i]))
}

func (s *Server) deleteBinding(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.findBinding(r.PathValue("id"))
	if i < 0 {
		notFound(w, "clusterroletemplatebindings.management.cattle.io", r.PathValue("id"))
		return
	}
	v := s.bindingView(s.bindings[i])
	s.bindings = slices.Delete(s.bindings, i, i+1)
	writeJSON(w, http.StatusOK, v)
}

// Bindings returns every cluster role template binding, oldest first.
func (s *Server) Bindings() []Binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Binding
	for _, b := range s.bindings {
		out = append(out, Binding{
			ID: b.id(), ClusterID: b.clusterID, UserPrincipalID: b.userPrincipalID,
			GroupPrincipalID: b.groupPrincipalID, RoleTemplateID: b.roleTemplateID,
		})
	}
	return out
}
