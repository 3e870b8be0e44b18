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
func tagsAPI(cl *call) (any, error) {
	r := cl.r
	var replace []string
	if r.Method == http.MethodPut && r.PathValue("tag") == "" {
		body, err := readJSON(r)
		tags, ok := strList(body, "tags")
		if _, present := body["tags"]; err != nil || !present || !ok {
			return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags. Reason: expected a list of strings.")
		}
		replace = tags
	}
	c := cl.s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	tags, m, e := c.taggable(r.PathValue("collection"), r.PathValue("id"), cl.t)
	if e != nil {
		return nil, e
	}
	if e := validTags(append(slices.Clone(replace), r.PathValue("tag"))); e != nil {
		return nil, e
	}
	tag := r.PathValue("tag")
	switch {
	case r.Method == http.MethodGet && tag == "":
		return map[string]any{"tags": sortedTags(*tags)}, nil
	case r.Method == http.MethodPut && tag == "":
		*tags = sortedTags(replace)
		m.touch()
		return map[string]any{"tags": sortedTags(*tags)}, nil
	case r.Method == http.MethodPut:
		if !slices.Contains(*tags, tag) {
			*tags = sortedTags(append(*tags, tag))
			m.touch()
		}
		return created(nil), nil
	case tag == "":
		*tags = nil
		m.touch()
		return noContent(), nil
	case !slices.Contains(*tags, tag):
		return nil, errf(http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag)
	case r.Method == http.MethodDelete:
		*tags = slices.DeleteFunc(*tags, func(x string) bool { return x == tag })
		m.touch()
	}
	return noContent(), nil
}

// neutronQuota serves GET /v2.0/quotas/{project}[/details].
func neutronQuota(cl *call) (any, error) {
	project := cl.r.PathValue("project")
	if project != cl.t.project && !cl.t.admin() {
		return nil, errf(http.StatusForbidden, "HTTPForbidden", "Non-admin is not authorized to access quotas for another project")
	}
	c := cl.s.st
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
		if cl.r.URL.Path == "/v2.0/quotas/"+project {
			out[k] = limit
			continue
		}
		out[k] = map[string]any{"limit": limit, "used": c.count(project, k+"s"), "reserved": 0}
	}
	return map[string]any{"quota": out}, nil
}
