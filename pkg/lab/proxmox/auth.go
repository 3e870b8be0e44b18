package proxmox

import (
	"crypto/subtle"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Token is an API token ("user@realm!tokenid" with its secret) and the ACL
// entries that grant it privileges (as for a token with --privsep 0 whose
// user holds these ACLs, or a privilege-separated token's own ACLs).
type Token struct {
	ID     string
	Secret string
	ACL    []ACL
}

// ACL grants Privs on Path ("/", "/vms", "/vms/100", "/storage/local",
// "/pool/x", "/sdn/zones/localnetwork", "/nodes/pve1", ...). Like PVE's
// ACLs they propagate to sub-paths unless NoPropagate is set, and the
// deepest matching path wins over the ones above it.
type ACL struct {
	Path        string
	Privs       []string
	NoPropagate bool
}

// AllPrivileges returns every PVE 9 privilege (the Administrator role).
func AllPrivileges() []string {
	return []string{
		"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
		"Group.Allocate", "Mapping.Audit", "Mapping.Modify", "Mapping.Use", "Permissions.Modify",
		"Pool.Allocate", "Pool.Audit", "Realm.Allocate", "Realm.AllocateUser",
		"SDN.Allocate", "SDN.Audit", "SDN.Use",
		"Sys.AccessNetwork", "Sys.Audit", "Sys.Console", "Sys.Incoming", "Sys.Modify", "Sys.PowerMgmt", "Sys.Syslog",
		"User.Modify", "VM.Allocate", "VM.Audit", "VM.Backup", "VM.Clone",
		"VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit", "VM.Config.Disk", "VM.Config.HWType",
		"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.Console",
		"VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite",
		"VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.PowerMgmt", "VM.Replicate", "VM.Snapshot", "VM.Snapshot.Rollback",
	}
}

// TalosClusterPrivileges returns the privileges of the role talosc's
// documentation suggests (TalosCluster), the union of its preflight table.
func TalosClusterPrivileges() []string {
	return []string{
		"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit",
		"Pool.Allocate", "Pool.Audit", "SDN.Allocate", "SDN.Audit", "SDN.Use", "Sys.AccessNetwork", "Sys.Audit",
		"VM.Allocate", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.HWType",
		"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.GuestAgent.Audit", "VM.PowerMgmt",
	}
}

// token is a configured API token.
type token struct {
	id     string // user@realm!name
	user   string // user@realm
	secret string
	acl    []ACL
}

// AddToken adds (or replaces) an API token.
func (s *Server) AddToken(t Token) error {
	user, name, ok := strings.Cut(t.ID, "!")
	if !ok || name == "" || !strings.Contains(user, "@") || t.Secret == "" {
		return fmt.Errorf("token %q: want user@realm!tokenid and a secret", t.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]*token{}
	}
	s.tokens[t.ID] = &token{id: t.ID, user: user, secret: t.Secret, acl: normalizeACL(t.ACL)}
	return nil
}

// SetACL replaces the ACL entries of a token.
func (s *Server) SetACL(tokenID string, acl []ACL) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[tokenID]
	if t == nil {
		return fmt.Errorf("no token %q", tokenID)
	}
	t.acl = normalizeACL(acl)
	return nil
}

func normalizeACL(acl []ACL) []ACL {
	out := make([]ACL, len(acl))
	for i, a := range acl {
		out[i] = ACL{Path: normPath(a.Path), Privs: slices.Clone(a.Privs), NoPropagate: a.NoPropagate}
	}
	return out
}

func normPath(p string) string {
	p = "/" + strings.Trim(p, "/")
	return p
}

// authenticate checks the PVEAPIToken header (tickets are not simulated).
func (s *Server) authenticate(r *http.Request) (*token, error) {
	h := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(h, "PVEAPIToken=")
	if !ok {
		rest, ok = strings.CutPrefix(h, "PVEAPIToken ")
	}
	if !ok {
		return nil, &apiError{status: http.StatusUnauthorized, message: "No ticket"}
	}
	i := strings.LastIndex(rest, "=")
	if i < 0 {
		return nil, &apiError{status: http.StatusUnauthorized, message: "invalid token value!"}
	}
	id, secret := rest[:i], rest[i+1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens[id]
	if t == nil || subtle.ConstantTimeCompare([]byte(t.secret), []byte(secret)) != 1 {
		return nil, &apiError{status: http.StatusUnauthorized, message: "invalid token value!"}
	}
	return t, nil
}

// privileges returns the token's effective privileges on path: those of
// the deepest ACL path that applies (exact, or an ancestor that
// propagates), each mapped to its propagate flag. The caller holds s.mu.
func (t *token) privileges(path string) map[string]bool {
	path = normPath(path)
	best := -1
	out := map[string]bool{}
	for _, a := range t.acl {
		exact := a.Path == path
		if !exact && (a.NoPropagate || !isAncestor(a.Path, path)) {
			continue
		}
		d := depth(a.Path)
		if d < best {
			continue
		}
		if d > best {
			best = d
			clear(out)
		}
		for _, p := range a.Privs {
			out[p] = out[p] || !a.NoPropagate
		}
	}
	return out
}

func isAncestor(anc, path string) bool {
	return anc == "/" || strings.HasPrefix(path, anc+"/")
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// has reports whether the token holds every one of privs on path.
func (c *call) has(path string, privs ...string) bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.hasLocked(path, privs...)
}

func (c *call) hasLocked(path string, privs ...string) bool {
	eff := c.tok.privileges(path)
	for _, p := range privs {
		if _, ok := eff[p]; !ok {
			return false
		}
	}
	return true
}

// hasAnyLocked reports whether the token holds at least one of privs.
func (c *call) hasAnyLocked(path string, privs ...string) bool {
	eff := c.tok.privileges(path)
	for _, p := range privs {
		if _, ok := eff[p]; ok {
			return true
		}
	}
	return false
}

// require fails with PVE's 403 unless the token holds every one of privs.
func (c *call) require(path string, privs ...string) error {
	if !c.has(path, privs...) {
		return forbidden(path, privs...)
	}
	return nil
}

// requireAny fails unless the token holds at least one of privs.
func (c *call) requireAny(path string, privs ...string) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if !c.hasAnyLocked(path, privs...) {
		return forbidden(path, privs...)
	}
	return nil
}

// wellKnownPaths are the paths PVE always evaluates for /access/permissions.
var wellKnownPaths = []string{"/", "/access", "/access/groups", "/mapping", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

// getPermissions is GET /access/permissions: effective privileges per path
// for the calling token (or, with userid, for that token id).
func (s *Server) getPermissions(c *call) (any, error) {
	if err := c.p.check(schema{names: []string{"path", "userid"}}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := c.tok
	if uid := c.p.str("userid"); uid != "" && uid != t.id {
		other := s.tokens[uid]
		if other == nil || !c.hasLocked("/access", "Sys.Audit") {
			return nil, forbidden("/access", "Sys.Audit")
		}
		t = other
	}
	flags := func(path string) map[string]int {
		out := map[string]int{}
		for p, prop := range t.privileges(path) {
			out[p] = map[bool]int{true: 1, false: 0}[prop]
		}
		return out
	}
	res := map[string]map[string]int{}
	if c.p.has("path") {
		p := normPath(c.p.str("path"))
		res[p] = flags(p)
		return res, nil
	}
	paths := map[string]bool{}
	for _, p := range wellKnownPaths {
		paths[p] = true
	}
	for _, a := range t.acl {
		paths[a.Path] = true
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if f := flags(p); len(f) > 0 {
			res[p] = f
		}
	}
	return res, nil
}
