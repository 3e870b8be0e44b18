package rancher

import (
	"net/http"
	"slices"
	"strings"
)

// principalFor is the principal id the selected provider gives login
// (R@v2.11.3:pkg/auth/providers/: local/local_auth_provider.go, ldap/ldap_client.go:387-412,483-494).
func (s *Server) principalFor(login string) string {
	switch s.opts.Provider {
	case ProviderOpenLDAP:
		return "openldap_user://uid=" + login + ",ou=users,dc=lab"
	case ProviderShibboleth:
		return "shibboleth_user://" + login
	}
	return "local://u-" + s.randID(5)
}

func (s *Server) principalView(id, name, login, ptype string) map[string]any {
	provider, _, _ := strings.Cut(id, "://")
	provider = strings.TrimSuffix(strings.TrimSuffix(provider, "_user"), "_group")
	return map[string]any{
		"type": "principal", "baseType": "principal", "id": id, "name": name, "loginName": login,
		"principalType": ptype, "provider": provider, "me": id == s.AdminPrincipalID, "memberOf": false,
		"profilePicture": "", "profileURL": "", "extraInfo": map[string]any{},
		"links": map[string]any{"self": s.URL + "/v3/principals/" + strings.ReplaceAll(id, "/", "%2F")},
	}
}

// admin is the token's own user, a local user whatever the provider.
func (s *Server) admin() User {
	return User{Username: "admin", DisplayName: "Default Admin", PrincipalID: s.AdminPrincipalID}
}

// localMatch is the local provider's search: a query of up to six
// characters matches a prefix (two characters at least) of the username,
// the display name or one of its words, or the user object's name; a
// longer one a substring of the username or display name, or a prefix of
// the object's name; case-insensitively
// (R@v2.11.3:pkg/auth/providers/local/local_auth_provider.go:400-455).
func localMatch(u User, q string) bool {
	q = strings.ToLower(q)
	object := strings.TrimPrefix(u.PrincipalID, "local://")
	names := []string{strings.ToLower(u.Username), strings.ToLower(u.DisplayName)}
	if len(q) > 6 {
		return strings.Contains(names[0], q) || strings.Contains(names[1], q) || strings.HasPrefix(object, q)
	}
	if len(q) < 2 {
		return false
	}
	names = append(names, strings.Fields(names[1])...)
	return slices.ContainsFunc(append(names, object), func(n string) bool { return strings.HasPrefix(n, q) })
}

// prefixMatch is an LDAP search (attr=<q>*) over the login and display
// name, case-insensitively as uid and cn compare.
func prefixMatch(q string, names ...string) bool {
	return q != "" && slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(strings.ToLower(n), strings.ToLower(q)) })
}

// principalsAction serves POST /v3/principals?action=search {"name": …}
// as the provider of the token's user answers it; for a non-local
// provider, local users are appended (R@v2.11.3:pkg/auth/providers/providers.go:215-237).
func (s *Server) principalsAction(cl *call) (any, error) {
	r := cl.r
	if a := r.URL.Query().Get("action"); a != "search" {
		return nil, norman(http.StatusUnprocessableEntity, "InvalidAction", "Invalid action: "+a)
	}
	var in struct {
		Name          string `json:"name"`
		PrincipalType string `json:"principalType"`
	}
	if err := cl.decode(&in); err != nil {
		return nil, err
	}
	local := s.opts.Provider == ProviderLocal
	var data []map[string]any
	if in.PrincipalType == "" || in.PrincipalType == "user" {
		users := s.users
		if local {
			users = append([]User{s.admin()}, users...)
		}
		for _, u := range users {
			if local && localMatch(u, in.Name) || !local && prefixMatch(in.Name, u.Username, u.DisplayName) {
				data = append(data, s.principalView(u.PrincipalID, u.DisplayName, u.Username, "user"))
			}
		}
		if a := s.admin(); !local && localMatch(a, in.Name) {
			data = append(data, s.principalView(a.PrincipalID, a.DisplayName, a.Username, "user"))
		}
	}
	if !local && (in.PrincipalType == "" || in.PrincipalType == "group") {
		for _, g := range s.opts.Groups {
			if prefixMatch(in.Name, g.Name) {
				data = append(data, s.principalView(g.PrincipalID, g.Name, "", "group"))
			}
		}
	}
	return s.collection("principal", "/v3/principals", data), nil
}

// Users returns the configured users with their principal ids.
func (s *Server) Users() []User { return slices.Clone(s.users) }
