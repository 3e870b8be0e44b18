package openstack

import (
	"net/http"
	"slices"
)

// taggable returns the tags and meta of a visible Neutron resource by its
// URL collection name; callers hold the lock.
func (c *state) taggable(collection, id string, t *token) (*[]string, *meta, *apiError) {
	switch collection {
	case "networks":
		if n, e := c.network(id, t); e == nil {
			return &n.Tags, &n.meta, nil
		}
	case "subnets":
		if sn, e := c.subnet(id, t); e == nil {
			return &sn.Tags, &sn.meta, nil
		}
	case "ports":
		if p, e := c.port(id, t); e == nil {
			return &p.Tags, &p.meta, nil
		}
	case "routers":
		if rt, e := c.router(id, t); e == nil {
			return &rt.Tags, &rt.meta, nil
		}
	case "floatingips":
		if f, e := c.fip(id, t); e == nil {
			return &f.Tags, &f.meta, nil
		}
	case "security-groups", "security_groups":
		if g, e := c.sg(id, t); e == nil {
			return &g.Tags, &g.meta, nil
		}
	default:
		return nil, nil, errf(http.StatusNotFound, "NotFound", "The resource could not be found.")
	}
	return nil, nil, errf(http.StatusNotFound, "NotFound", "%s %s could not be found.", collection, id)
}

// tagsAPI serves /v2.0/{collection}/{id}/tags[/{tag}] (standard-attr-tag).
func (s *Cloud) tagsAPI(w http.ResponseWriter, r *http.Request, t *token) {
	var replace []string
	if r.Method == http.MethodPut && r.PathValue("tag") == "" {
		body, err := readJSON(r)
		tags, ok := strList(body, "tags")
		if _, present := body["tags"]; err != nil || !present || !ok {
			neutronError(w, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags. Reason: expected a list of strings."))
			return
		}
		replace = tags
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	tags, m, e := c.taggable(r.PathValue("collection"), r.PathValue("id"), t)
	if e == nil {
		e = validTags(append(slices.Clone(replace), r.PathValue("tag")))
	}
	if e != nil {
		neutronError(w, e)
		return
	}
	tag := r.PathValue("tag")
	switch {
	case r.Method == http.MethodGet && tag == "":
		writeJSON(w, http.StatusOK, map[string]any{"tags": sortedTags(*tags)})
	case r.Method == http.MethodGet:
		if !slices.Contains(*tags, tag) {
			neutronError(w, errf(http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPut && tag == "":
		*tags = sortedTags(replace)
		m.touch()
		writeJSON(w, http.StatusOK, map[string]any{"tags": sortedTags(*tags)})
	case r.Method == http.MethodPut:
		if !slices.Contains(*tags, tag) {
			*tags = sortedTags(append(*tags, tag))
			m.touch()
		}
		w.WriteHeader(http.StatusCreated)
	case tag == "":
		*tags = nil
		m.touch()
		w.WriteHeader(http.StatusNoContent)
	default:
		if !slices.Contains(*tags, tag) {
			neutronError(w, errf(http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag))
			return
		}
		*tags = slices.DeleteFunc(*tags, func(x string) bool { return x == tag })
		m.touch()
		w.WriteHeader(http.StatusNoContent)
	}
}

// neutronQuota serves GET /v2.0/quotas/{project}[/details].
func (s *Cloud) neutronQuota(w http.ResponseWriter, r *http.Request, t *token) {
	project := r.PathValue("project")
	if project != t.project && !t.admin() {
		neutronError(w, errf(http.StatusForbidden, "HTTPForbidden", "Non-admin is not authorized to access quotas for another project"))
		return
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.quota(project)
	limits := map[string]int{
		"network": q.Networks, "subnet": q.Subnets, "port": q.Ports, "router": q.Routers,
		"floatingip": q.FloatingIPs, "security_group": q.SecurityGroups, "security_group_rule": q.SecurityGroupRules,
	}
	out := map[string]any{}
	for k, limit := range limits {
		if limit <= 0 {
			limit = -1
		}
		if r.URL.Path == "/v2.0/quotas/"+project {
			out[k] = limit
			continue
		}
		out[k] = map[string]any{"limit": limit, "used": c.count(project, k+"s"), "reserved": 0}
	}
	writeJSON(w, http.StatusOK, map[string]any{"quota": out})
}
