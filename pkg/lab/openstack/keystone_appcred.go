package openstack

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// AppCredential is an application credential minted by the lab.
type AppCredential struct {
	ID, Name, Secret string
	// Project is the name of the project the credential is bound to.
	Project string
}

// CreateApplicationCredential mints an application credential for the
// user named userName, bound to the user's project with the user's roles.
func (s *Cloud) CreateApplicationCredential(userName, name string) (AppCredential, error) {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.users {
		if u.name == userName {
			ac, ok := c.addAppCred(u, name, "", "")
			if !ok {
				return AppCredential{}, fmt.Errorf("user %q: %s", userName, dupAppCred)
			}
			return AppCredential{ID: ac.id, Name: ac.name, Secret: ac.secret, Project: c.projects[ac.project].Name}, nil
		}
	}
	return AppCredential{}, fmt.Errorf("no user %q", userName)
}

// dupAppCred is Keystone's conflict message for a reused credential name.
const dupAppCred = "Conflict occurred attempting to store application_credential - Duplicate entry."

// addAppCred adds a credential; ok is false if the user has one by name.
func (c *state) addAppCred(u *user, name, secret, description string) (ac *appCred, ok bool) {
	for _, ac := range c.appCreds {
		if ac.user == u.id && ac.name == name {
			return nil, false
		}
	}
	if secret == "" {
		var b [48]byte
		_, _ = rand.Read(b[:])
		secret = base64.RawURLEncoding.EncodeToString(b[:])
	}
	ac = &appCred{id: newHexID(), name: name, secret: secret, user: u.id, project: u.project, description: description, roles: slices.Clone(u.roles)}
	c.appCreds[ac.id] = ac
	return ac, true
}

func appCredJSON(ac *appCred, withSecret bool) map[string]any {
	roles := []any{}
	for _, r := range ac.roles {
		roles = append(roles, map[string]any{"id": stableID("role", r), "name": r, "domain_id": nil})
	}
	m := map[string]any{
		"id": ac.id, "name": ac.name, "description": ac.description, "project_id": ac.project, "user_id": ac.user,
		"roles": roles, "expires_at": nil, "unrestricted": false, "access_rules": []any{},
	}
	if withSecret {
		m["secret"] = ac.secret
	}
	return m
}

func (s *Cloud) createAppCredAPI(cl *call) (any, error) {
	r, t := cl.r, cl.t
	if r.PathValue("id") != t.user {
		return nil, keystoneErr(http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:create_application_credential.")
	}
	if t.appCred != "" {
		return nil, keystoneErr(http.StatusForbidden, "Forbidden", "Using method 'application_credential' is not allowed for managing additional application credentials.")
	}
	body, err := readJSON(r)
	spec := obj(body, "application_credential")
	if err != nil || spec == nil || strings.TrimSpace(str(spec, "name")) == "" {
		return nil, keystoneErr(http.StatusBadRequest, "Bad Request", "Invalid input for field 'name': 'name' is a required property")
	}
	c := s.st
	c.mu.Lock()
	ac, ok := c.addAppCred(c.users[t.user], str(spec, "name"), str(spec, "secret"), str(spec, "description"))
	c.mu.Unlock()
	if !ok {
		return nil, keystoneErr(http.StatusConflict, "Conflict", dupAppCred)
	}
	return created(map[string]any{"application_credential": appCredJSON(ac, true)}), nil
}

func (s *Cloud) listAppCreds(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []any{}
	for _, ac := range c.appCreds {
		if ac.user == r.PathValue("id") && (ac.user == t.user || t.admin()) {
			out = append(out, appCredJSON(ac, false))
		}
	}
	return map[string]any{"application_credentials": out}, nil
}

func (s *Cloud) deleteAppCred(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	ac, ok := c.appCreds[r.PathValue("cred")]
	if !ok || ac.user != r.PathValue("id") || (ac.user != t.user && !t.admin()) {
		return nil, keystoneErr(http.StatusNotFound, "Not Found", fmt.Sprintf("Could not find application credential: %s.", r.PathValue("cred")))
	}
	delete(c.appCreds, ac.id)
	for id, tok := range c.tokens {
		if tok.appCred == ac.id {
			delete(c.tokens, id)
		}
	}
	return reply{status: http.StatusNoContent}, nil
}
