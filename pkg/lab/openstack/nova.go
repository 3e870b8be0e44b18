package openstack

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Nova's microversion range (the real lab's Zed).
const (
	novaMinMinor = 1
	novaMaxMinor = 93
)

func novaError(w http.ResponseWriter, e *apiError) {
	key := map[int]string{
		400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 405: "badMethod",
		409: "conflictingRequest", 413: "overLimit", 415: "badMediaType", 429: "overLimit", 501: "notImplemented", 503: "serviceUnavailable",
	}[e.code]
	if key == "" {
		key = "computeFault"
	}
	writeJSON(w, e.code, map[string]any{key: map[string]any{"code": e.code, "message": e.msg}})
}

// novaVersion reads the requested compute microversion (2.x → x).
func novaVersion(r *http.Request) (int, *apiError) {
	v := r.Header.Get("X-OpenStack-Nova-API-Version")
	if h := r.Header.Get("OpenStack-API-Version"); h != "" {
		if svc, ver, ok := strings.Cut(strings.TrimSpace(h), " "); ok && strings.EqualFold(svc, "compute") {
			v = strings.TrimSpace(ver)
		}
	}
	switch v {
	case "":
		return novaMinMinor, nil
	case "latest":
		return novaMaxMinor, nil
	}
	major, minor, ok := strings.Cut(v, ".")
	n, err := strconv.Atoi(minor)
	if !ok || err != nil || (major != "2" && major != "3" && major != "1") {
		return 0, errf(http.StatusBadRequest, "", "API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", v)
	}
	if major != "2" || n < novaMinMinor || n > novaMaxMinor {
		return 0, errf(http.StatusNotAcceptable, "", "Version %s is not supported by the API. Minimum is 2.%d and maximum is 2.%d.", v, novaMinMinor, novaMaxMinor)
	}
	return n, nil
}

// novaCheck reads the microversion (2.x → x) and answers with it.
func novaCheck(c *call) *apiError {
	mv, e := novaVersion(c.r)
	if e != nil {
		return e
	}
	c.mv = mv
	c.w.Header().Set("OpenStack-API-Version", fmt.Sprintf("compute 2.%d", mv))
	c.w.Header().Set("X-OpenStack-Nova-API-Version", fmt.Sprintf("2.%d", mv))
	c.w.Header().Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
	return nil
}

func (s *Cloud) novaMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{s.computeVersion("v2.0"), s.computeVersion("v2.1")}})
	})
	getBoth(mux, "/v2.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": s.computeVersion("v2.1")})
	}))
	mux.HandleFunc("POST /v2.1/servers", s.nova(s.createServer))
	mux.HandleFunc("GET /v2.1/servers", s.nova(s.listServers))
	mux.HandleFunc("GET /v2.1/servers/detail", s.nova(s.listServers))
	mux.HandleFunc("GET /v2.1/servers/{id}", s.nova(s.showServer))
	mux.HandleFunc("PUT /v2.1/servers/{id}", s.nova(s.updateServer))
	mux.HandleFunc("DELETE /v2.1/servers/{id}", s.nova(s.deleteServer))
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		mux.HandleFunc(m+" /v2.1/servers/{id}/tags", s.nova(s.serverTags))
		mux.HandleFunc(m+" /v2.1/servers/{id}/tags/{tag}", s.nova(s.serverTags))
	}
	mux.HandleFunc("GET /v2.1/servers/{id}/os-volume_attachments", s.nova(s.volumeAttachments))
	mux.HandleFunc("GET /v2.1/flavors", s.nova(s.listFlavors))
	mux.HandleFunc("GET /v2.1/flavors/detail", s.nova(s.listFlavors))
	mux.HandleFunc("GET /v2.1/flavors/{id}", s.nova(s.showFlavor))
	mux.HandleFunc("GET /v2.1/flavors/{id}/os-extra_specs", s.nova(func(*call) (any, error) {
		return map[string]any{"extra_specs": map[string]any{}}, nil
	}))
	mux.HandleFunc("GET /v2.1/os-availability-zone", s.nova(s.zones))
	mux.HandleFunc("GET /v2.1/os-availability-zone/detail", s.nova(s.zones))
	mux.HandleFunc("GET /v2.1/limits", s.nova(s.limits))
	mux.HandleFunc("GET /v2.1/os-quota-sets/{project}", s.nova(s.quotaSet))
	mux.HandleFunc("GET /v2.1/os-quota-sets/{project}/detail", s.nova(s.quotaSet))
	mux.HandleFunc("GET /v2.1/os-quota-sets/{project}/defaults", s.nova(s.quotaSet))
	mux.HandleFunc("/", s.catchAll(Nova))
	return mux
}

func (s *Cloud) computeVersion(id string) map[string]any {
	v := map[string]any{
		"id": id, "status": "SUPPORTED", "version": "", "min_version": "", "updated": "2011-01-21T11:33:21Z",
		"links": []any{map[string]any{"href": s.URL + ComputePrefix + "/" + strings.TrimSuffix(id, ".0") + "/", "rel": "self"}},
	}
	if id == "v2.1" {
		v["status"], v["version"], v["min_version"], v["updated"] = "CURRENT", fmt.Sprintf("2.%d", novaMaxMinor), "2.1", "2013-07-23T11:33:21Z"
	}
	return v
}

// server returns a server of t's project (or any, for an admin).
func (c *state) server(id string, t *token) (*Server, *apiError) {
	srv, ok := c.servers[id]
	if !ok || !visible(t, srv.ProjectID) {
		return nil, errf(http.StatusNotFound, "", "Instance %s could not be found.", id)
	}
	return srv, nil
}

func (s *Cloud) showServer(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	return map[string]any{"server": s.serverView(srv, t, mv)}, nil
}

func (s *Cloud) listServers(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	q := r.URL.Query()
	all := q.Has("all_tenants") && !slices.Contains([]string{"0", "false", "False", "f", "off", "no"}, q.Get("all_tenants"))
	if all && !t.admin() {
		return nil, errf(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:servers:index:get_all_tenants to be performed.")
	}
	var nameRE *regexp.Regexp
	if n := q.Get("name"); n != "" {
		re, err := regexp.Compile(n)
		if err != nil {
			return nil, errf(http.StatusBadRequest, "", "Invalid input for query parameters name. Value: %s. '%s' is not a 'regex'", n, n)
		}
		nameRE = re
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	servers := sortedValues(c.servers, func(x *Server) int64 { return x.seq })
	slices.Reverse(servers) // Nova lists newest first
	var out []*Server
	for _, srv := range servers {
		if (!all && srv.ProjectID != t.project) || (nameRE != nil && !nameRE.MatchString(srv.Name)) ||
			(q.Has("status") && !strings.EqualFold(q.Get("status"), srv.Status)) || (mv >= 26 && !tagsMatch(r, srv.Tags)) {
			continue
		}
		out = append(out, srv)
	}
	page, next := paginate(r, out, func(x *Server) string { return x.ID })
	views := make([]any, 0, len(page))
	for _, srv := range page {
		if strings.HasSuffix(r.URL.Path, "/detail") {
			views = append(views, s.serverView(srv, t, mv))
		} else {
			views = append(views, map[string]any{"id": srv.ID, "name": srv.Name, "links": s.serverLinks(srv.ID)})
		}
	}
	resp := map[string]any{"servers": views}
	if next != "" {
		resp["servers_links"] = []any{map[string]any{"rel": "next", "href": nextLink(s.URL+ComputePrefix, r, next)}}
	}
	return resp, nil
}

func (s *Cloud) updateServer(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	body, err := readJSON(r)
	spec := obj(body, "server")
	if err != nil || spec == nil {
		return nil, errf(http.StatusBadRequest, "", "Invalid input for field/attribute server. Value: None. None is not of type 'object'")
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	if n, ok := spec["name"].(string); ok {
		srv.Name = n
		srv.touch()
	}
	return map[string]any{"server": s.serverView(srv, t, mv)}, nil
}

func (s *Cloud) deleteServer(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	if srv.TaskState == "deleting" || srv.Status == "DELETED" {
		return noContent(), nil
	}
	srv.TaskState = "deleting"
	srv.touch()
	half := c.cfg.DeleteDelay / 2
	c.after(half, func() {
		srv.Status, srv.VMState, srv.TaskState = "DELETED", "deleted", ""
		srv.touch()
		c.after(c.cfg.DeleteDelay-half, func() { c.destroyServer(srv) })
	})
	return noContent(), nil
}

// destroyServer removes a deleted server: its own ports go, the ports it
// was given are unbound, its volumes are deleted or detached; callers
// hold the lock.
func (c *state) destroyServer(srv *Server) {
	ev := Event{Kind: ServerDeleted, Server: srv.clone(), UserData: decodeUserData(srv.UserData), Ports: c.portsOf(srv)}
	for _, id := range slices.Clone(srv.Ports) {
		p, ok := c.ports[id]
		if !ok {
			continue
		}
		if slices.Contains(srv.ownPorts, id) {
			c.removePort(p)
			continue
		}
		p.DeviceID, p.DeviceOwner, p.BindingHost, p.Status = "", "", "", "DOWN"
		p.touch()
	}
	for _, av := range srv.Volumes {
		v, ok := c.volumes[av.ID]
		if !ok {
			continue
		}
		if av.DeleteOnTermination {
			delete(c.volumes, v.ID)
			continue
		}
		v.Status, v.ServerID, v.Device = "available", "", ""
		v.touch()
	}
	delete(c.servers, srv.ID)
	c.emit(ev)
}

// portsOf returns copies of a server's ports, in NIC order.
func (c *state) portsOf(srv *Server) []Port {
	var out []Port
	for _, id := range srv.Ports {
		if p, ok := c.ports[id]; ok {
			out = append(out, *p.clone())
		}
	}
	return out
}
