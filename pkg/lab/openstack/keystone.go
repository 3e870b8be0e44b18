package openstack

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

type user struct {
	id, name, password, project string
	roles                       []string
}

type appCred struct {
	id, name, secret, user, project string
	description                     string
	roles                           []string
}

type token struct {
	id, user, project string
	roles, methods    []string
	appCred           string
	issued, expires   time.Time
	audit             string
}

func (t *token) admin() bool { return slices.Contains(t.roles, "admin") }

func newTokenID() string {
	var b [96]byte
	_, _ = rand.Read(b[:])
	return "gAAAAA" + base64.RawURLEncoding.EncodeToString(b[:])
}

// stableID derives a Keystone-style id from a name (role and endpoint ids).
func stableID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// validToken returns a copy of the token with id, if it is valid.
func (c *state) validToken(id string) *token {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[id]
	if !ok || time.Now().After(t.expires) {
		return nil
	}
	cp := *t
	return &cp
}

// keystoneErr is a Keystone error: its title is the apiError's type.
func keystoneErr(code int, title, msg string) *apiError {
	return &apiError{code: code, typ: title, msg: msg}
}

// keystoneError writes e as Keystone's {"error": ...} body.
func keystoneError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.code, map[string]any{"error": map[string]any{"code": e.code, "title": e.typ, "message": e.msg}})
}

func (s *Cloud) keystoneMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{s.identityVersion()}}})
	})
	getBoth(mux, "/v3", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": s.identityVersion()})
	}))
	mux.HandleFunc("POST /v3/auth/tokens", s.keystoneOpen(s.issueToken))
	mux.HandleFunc("GET /v3/auth/tokens", s.keystone(s.checkToken))
	mux.HandleFunc("HEAD /v3/auth/tokens", s.keystone(s.checkToken))
	mux.HandleFunc("DELETE /v3/auth/tokens", s.keystone(s.revokeToken))
	mux.HandleFunc("GET /v3/auth/catalog", s.keystone(func(c *call) (any, error) {
		return map[string]any{"catalog": s.catalog(c.t.project)}, nil
	}))
	mux.HandleFunc("GET /v3/auth/projects", s.keystone(s.listProjects))
	mux.HandleFunc("GET /v3/projects", s.keystone(s.listProjects))
	mux.HandleFunc("GET /v3/projects/{id}", s.keystone(s.getProject))
	mux.HandleFunc("GET /v3/users/{id}", s.keystone(s.getUser))
	mux.HandleFunc("POST /v3/users/{id}/application_credentials", s.keystone(s.createAppCredAPI))
	mux.HandleFunc("GET /v3/users/{id}/application_credentials", s.keystone(s.listAppCreds))
	mux.HandleFunc("DELETE /v3/users/{id}/application_credentials/{cred}", s.keystone(s.deleteAppCred))
	mux.HandleFunc("/", s.catchAll(Keystone))
	return mux
}

func (s *Cloud) identityVersion() map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []any{map[string]any{"rel": "self", "href": s.URL + IdentityPrefix + "/v3/"}},
		"media-types": []any{map[string]any{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

// catalog is the service catalog of a token scoped to project.
func (s *Cloud) catalog(project string) []any {
	if project == "" {
		return []any{}
	}
	services := []struct{ name, typ, url string }{
		{"keystone", "identity", s.URL + IdentityPrefix + "/v3/"},
		{"nova", "compute", s.URL + ComputePrefix + "/v2.1"},
		{"neutron", "network", s.URL + NetworkPrefix},
		{"glance", "image", s.URL + ImagePrefix},
		{"cinderv3", "volumev3", s.URL + VolumePrefix + "/v3/" + project},
		{"cinder", "block-storage", s.URL + VolumePrefix + "/v3/" + project},
		{"swift", "object-store", s.URL + ObjectPrefix + "/v1/AUTH_" + project},
	}
	out := make([]any, 0, len(services))
	for _, svc := range services {
		var eps []any
		for _, itf := range []string{"public", "internal", "admin"} {
			eps = append(eps, map[string]any{
				"id": stableID(svc.typ, itf), "interface": itf, "region": s.cfg.Region, "region_id": s.cfg.Region, "url": svc.url,
			})
		}
		out = append(out, map[string]any{"id": stableID(svc.typ), "name": svc.name, "type": svc.typ, "endpoints": eps})
	}
	return out
}

func (s *Cloud) issueToken(cl *call) (any, error) {
	r := cl.r
	body, err := readJSON(r)
	if err != nil {
		return nil, keystoneErr(http.StatusBadRequest, "Bad Request", err.Error())
	}
	auth := obj(body, "auth")
	identity := obj(auth, "identity")
	methods, ok := strList(identity, "methods")
	if auth == nil || identity == nil || !ok || len(methods) == 0 {
		return nil, keystoneErr(http.StatusBadRequest, "Bad Request", "Invalid input for field 'identity': 'methods' is a required property")
	}
	c := s.st
	c.mu.Lock()
	t, msg := c.authenticate(methods[0], identity, obj(auth, "scope"))
	if t != nil {
		c.tokens[t.id] = t
	}
	c.mu.Unlock()
	if t == nil {
		return nil, keystoneErr(http.StatusUnauthorized, "Unauthorized", msg)
	}
	cl.w.Header().Set("X-Subject-Token", t.id)
	return created(s.tokenBody(t, !r.URL.Query().Has("nocatalog"))), nil
}

// authenticate checks credentials; callers hold the lock.
func (c *state) authenticate(method string, identity, scope map[string]any) (*token, string) {
	const generic = "The request you have made requires authentication."
	t := &token{id: newTokenID(), methods: []string{method}, issued: time.Now().UTC(), audit: base64.RawURLEncoding.EncodeToString([]byte(newHexID()[:16]))}
	t.expires = t.issued.Add(c.cfg.TokenTTL)
	var u *user
	switch method {
	case "password":
		spec := obj(obj(identity, "password"), "user")
		u = c.findUser(spec)
		if u == nil || str(spec, "password") != u.password {
			return nil, generic
		}
	case "application_credential":
		spec := obj(identity, "application_credential")
		ac := c.findAppCred(spec)
		if ac == nil || str(spec, "secret") != ac.secret {
			return nil, generic
		}
		if scope != nil {
			return nil, "Application credentials cannot request a scope."
		}
		t.user, t.project, t.roles, t.appCred = ac.user, ac.project, slices.Clone(ac.roles), ac.id
		return t, ""
	case "token":
		old, ok := c.tokens[str(obj(identity, "token"), "id")]
		if !ok || time.Now().After(old.expires) {
			return nil, generic
		}
		u = c.users[old.user]
		t.methods = slices.Clone(old.methods)
	default:
		return nil, fmt.Sprintf("Attempted to authenticate with an unsupported method: %s", method)
	}
	t.user = u.id
	if scope == nil {
		return t, ""
	}
	p := c.findProject(obj(scope, "project"))
	if p == nil || p.ID != u.project {
		return nil, fmt.Sprintf("User %s has no access to project %v", u.id, obj(scope, "project"))
	}
	t.project, t.roles = p.ID, slices.Clone(u.roles)
	return t, ""
}

// domainOK accepts only the Default domain, by id or name (or none).
func domainOK(spec map[string]any) bool {
	d := obj(spec, "domain")
	return d == nil || str(d, "id") == "default" || str(d, "name") == "Default"
}

func (c *state) findUser(spec map[string]any) *user {
	if id := str(spec, "id"); id != "" {
		return c.users[id]
	}
	if !domainOK(spec) {
		return nil
	}
	for _, u := range c.users {
		if u.name == str(spec, "name") {
			return u
		}
	}
	return nil
}

func (c *state) findProject(spec map[string]any) *Project {
	if id := str(spec, "id"); id != "" {
		return c.projects[id]
	}
	if !domainOK(spec) {
		return nil
	}
	return c.projectByName(str(spec, "name"))
}

func (c *state) findAppCred(spec map[string]any) *appCred {
	if id := str(spec, "id"); id != "" {
		return c.appCreds[id]
	}
	u := c.findUser(obj(spec, "user"))
	for _, ac := range c.appCreds {
		if u != nil && ac.user == u.id && ac.name == str(spec, "name") {
			return ac
		}
	}
	return nil
}

func (s *Cloud) tokenBody(t *token, withCatalog bool) map[string]any {
	c := s.st
	c.mu.Lock()
	u := c.users[t.user]
	p := c.projects[t.project]
	ac := c.appCreds[t.appCred]
	c.mu.Unlock()
	dom := map[string]any{"id": "default", "name": "Default"}
	body := map[string]any{
		"methods": t.methods, "audit_ids": []string{t.audit}, "is_domain": false,
		"issued_at": fmtTime(t.issued, timeKeystone), "expires_at": fmtTime(t.expires, timeKeystone),
		"user": map[string]any{"id": u.id, "name": u.name, "domain": dom, "password_expires_at": nil},
	}
	if p != nil {
		roles := make([]any, 0, len(t.roles))
		for _, r := range t.roles {
			roles = append(roles, map[string]any{"id": stableID("role", r), "name": r})
		}
		body["project"] = map[string]any{"id": p.ID, "name": p.Name, "domain": dom}
		body["roles"] = roles
		if withCatalog {
			body["catalog"] = s.catalog(p.ID)
		}
	}
	if ac != nil {
		body["application_credential"] = map[string]any{"id": ac.id, "name": ac.name, "restricted": true}
	}
	return map[string]any{"token": body}
}

func (s *Cloud) checkToken(cl *call) (any, error) {
	r := cl.r
	subject := s.st.validToken(r.Header.Get("X-Subject-Token"))
	if subject == nil {
		return nil, keystoneErr(http.StatusNotFound, "Not Found", fmt.Sprintf("Could not find token: %s.", r.Header.Get("X-Subject-Token")))
	}
	cl.w.Header().Set("X-Subject-Token", subject.id)
	return s.tokenBody(subject, !r.URL.Query().Has("nocatalog")), nil
}

func (s *Cloud) revokeToken(cl *call) (any, error) {
	r := cl.r
	c := s.st
	c.mu.Lock()
	_, ok := c.tokens[r.Header.Get("X-Subject-Token")]
	delete(c.tokens, r.Header.Get("X-Subject-Token"))
	c.mu.Unlock()
	if !ok {
		return nil, keystoneErr(http.StatusNotFound, "Not Found", "Could not find token.")
	}
	return reply{status: http.StatusNoContent}, nil
}

func projectJSON(p *Project) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "domain_id": "default", "enabled": true, "is_domain": false, "parent_id": "default", "description": "", "tags": []string{}}
}

func (s *Cloud) listProjects(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := r.URL.Path == "/v3/auth/projects"
	if !mine && !t.admin() {
		return nil, keystoneErr(http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:list_projects.")
	}
	out := []any{}
	u := c.users[t.user]
	for _, p := range c.sortedProjects() {
		if (mine && p.ID != u.project) || (r.URL.Query().Has("name") && r.URL.Query().Get("name") != p.Name) {
			continue
		}
		out = append(out, projectJSON(p))
	}
	return map[string]any{"projects": out}, nil
}

func (c *state) sortedProjects() []*Project {
	out := slices.Collect(maps.Values(c.projects))
	slices.SortFunc(out, func(a, b *Project) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *Cloud) getProject(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.projects[r.PathValue("id")]
	if !ok || (!t.admin() && p.ID != t.project) {
		return nil, keystoneErr(http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:get_project.")
	}
	return map[string]any{"project": projectJSON(p)}, nil
}

func (s *Cloud) getUser(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[r.PathValue("id")]
	if !ok || (!t.admin() && u.id != t.user) {
		return nil, keystoneErr(http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:get_user.")
	}
	return map[string]any{"user": map[string]any{
		"id": u.id, "name": u.name, "domain_id": "default", "enabled": true, "default_project_id": u.project, "password_expires_at": nil,
	}}, nil
}
