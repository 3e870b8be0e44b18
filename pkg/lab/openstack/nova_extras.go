package openstack

import (
	"maps"
	"net/http"
	"slices"
)

// serverTags serves /servers/{id}/tags[/{tag}] (microversion ≥ 2.26).
func (s *Cloud) serverTags(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	if mv < 26 {
		return nil, errf(http.StatusNotFound, "", "The resource could not be found.")
	}
	var replace []string
	tag := r.PathValue("tag")
	if r.Method == http.MethodPut && tag == "" {
		body, err := readJSON(r)
		tags, ok := strList(body, "tags")
		if err != nil || !ok || body["tags"] == nil {
			return nil, invalid("tags", body["tags"], "is not of type 'array'")
		}
		replace = tags
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	if r.Method != http.MethodGet && srv.VMState != "active" && srv.VMState != "error" {
		action := map[string]string{http.MethodPut: "update tag", http.MethodDelete: "delete tag"}[r.Method]
		if tag == "" {
			action += "s"
		}
		return nil, errf(http.StatusConflict, "", "Cannot '%s' instance %s while it is in vm_state %s", action, srv.ID, srv.VMState)
	}
	for _, x := range append(slices.Clone(replace), tag) {
		if x == "" {
			continue
		}
		if e := validServerTag(x); e != nil {
			return nil, e
		}
	}
	return s.changeServerTags(cl, srv, tag, replace)
}

// changeServerTags answers a tags call on srv, vetted; callers hold the lock.
func (s *Cloud) changeServerTags(cl *call, srv *Server, tag string, replace []string) (any, error) {
	method := cl.r.Method
	has := slices.Contains(srv.Tags, tag)
	switch {
	case method == http.MethodGet && tag == "":
		return map[string]any{"tags": sortedTags(srv.Tags)}, nil
	case tag != "" && !has && method != http.MethodPut:
		return nil, errf(http.StatusNotFound, "", "Instance %s has no tag '%s'", srv.ID, tag)
	case method == http.MethodGet, method == http.MethodPut && tag != "" && has:
		return noContent(), nil
	case method == http.MethodPut && tag == "":
		if len(replace) > 50 {
			return nil, errf(http.StatusBadRequest, "", "The number of tags exceeded the per-server limit 50")
		}
		srv.Tags = sortedTags(replace)
		srv.touch()
		return map[string]any{"tags": srv.Tags}, nil
	case method == http.MethodPut:
		if len(srv.Tags) >= 50 {
			return nil, errf(http.StatusBadRequest, "", "The number of tags exceeded the per-server limit 50")
		}
		srv.Tags = sortedTags(append(srv.Tags, tag))
		srv.touch()
		cl.w.Header().Set("Location", s.URL+ComputePrefix+"/v2.1/servers/"+srv.ID+"/tags/"+tag)
		return created(nil), nil
	case tag == "":
		srv.Tags = nil
	default:
		srv.Tags = slices.DeleteFunc(srv.Tags, func(x string) bool { return x == tag })
	}
	srv.touch()
	return noContent(), nil
}

func (s *Cloud) flavorView(f Flavor, mv int, detail bool) map[string]any {
	v := map[string]any{"id": f.ID, "name": f.Name, "links": []any{
		map[string]any{"rel": "self", "href": s.URL + ComputePrefix + "/v2.1/flavors/" + f.ID},
		map[string]any{"rel": "bookmark", "href": s.URL + ComputePrefix + "/flavors/" + f.ID},
	}}
	if mv >= 55 {
		v["description"] = nil
	}
	if !detail {
		return v
	}
	var swap any = ""
	if mv >= 75 {
		swap = 0
	}
	maps.Copy(v, map[string]any{
		"ram": f.RAM, "vcpus": f.VCPUs, "disk": f.Disk, "OS-FLV-EXT-DATA:ephemeral": 0, "swap": swap,
		"rxtx_factor": 1.0, "os-flavor-access:is_public": true, "OS-FLV-DISABLED:disabled": false,
	})
	if mv >= 61 {
		v["extra_specs"] = map[string]any{}
	}
	return v
}

func (s *Cloud) listFlavors(cl *call) (any, error) {
	r, mv := cl.r, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []any{}
	for _, f := range c.flavors {
		out = append(out, s.flavorView(f, mv, r.URL.Path == "/v2.1/flavors/detail"))
	}
	return map[string]any{"flavors": out}, nil
}

func (s *Cloud) showFlavor(cl *call) (any, error) {
	r, mv := cl.r, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.flavors {
		if f.ID == r.PathValue("id") {
			return map[string]any{"flavor": s.flavorView(f, mv, true)}, nil
		}
	}
	return nil, errf(http.StatusNotFound, "", "Flavor %s could not be found.", r.PathValue("id"))
}

func (s *Cloud) zones(cl *call) (any, error) {
	r, t := cl.r, cl.t
	detail := r.URL.Path == "/v2.1/os-availability-zone/detail"
	if detail && !t.admin() {
		return nil, errf(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:os-availability-zone:detail to be performed.")
	}
	out := []any{}
	for _, z := range s.cfg.Zones {
		var hosts any
		if detail {
			hosts = map[string]any{"oslab": map[string]any{"nova-compute": map[string]any{"available": true, "active": true, "updated_at": nil}}}
		}
		out = append(out, map[string]any{"zoneName": z, "zoneState": map[string]any{"available": true}, "hosts": hosts})
	}
	return map[string]any{"availabilityZoneInfo": out}, nil
}

// computeUsage counts a project's servers, cores and RAM; callers hold the lock.
func (c *state) computeUsage(project string) (instances, cores, ram int) {
	for _, srv := range c.servers {
		if srv.ProjectID == project {
			f := c.flavorByID(srv.FlavorID)
			instances, cores, ram = instances+1, cores+f.VCPUs, ram+f.RAM
		}
	}
	return instances, cores, ram
}

func limitOrUnlimited(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func (s *Cloud) limits(cl *call) (any, error) {
	t, mv := cl.t, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.quota(t.project)
	instances, cores, ram := c.computeUsage(t.project)
	abs := map[string]any{
		"maxTotalInstances": limitOrUnlimited(q.Instances), "maxTotalCores": limitOrUnlimited(q.Cores), "maxTotalRAMSize": limitOrUnlimited(q.RAM),
		"totalInstancesUsed": instances, "totalCoresUsed": cores, "totalRAMUsed": ram, "maxServerMeta": 128, "maxTotalKeypairs": 100,
		"maxServerGroups": 10, "maxServerGroupMembers": 10, "totalServerGroupsUsed": 0,
	}
	if mv < 39 {
		abs["maxImageMeta"] = 128
	}
	if mv < 57 {
		abs["maxPersonality"], abs["maxPersonalitySize"] = 5, 10240
	}
	return map[string]any{"limits": map[string]any{"rate": []any{}, "absolute": abs}}, nil
}

func (s *Cloud) quotaSet(cl *call) (any, error) {
	r, t := cl.r, cl.t
	project := r.PathValue("project")
	if project != t.project && !t.admin() {
		return nil, errf(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:os-quota-sets:show to be performed.")
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.quota(project)
	instances, cores, ram := c.computeUsage(project)
	set := map[string]any{"id": project}
	for _, x := range []struct {
		key          string
		limit, inUse int
	}{
		{"instances", q.Instances, instances},
		{"cores", q.Cores, cores},
		{"ram", q.RAM, ram},
		{"metadata_items", 128, 0},
		{"key_pairs", 100, 0},
		{"server_groups", 10, 0},
		{"server_group_members", 10, 0},
	} {
		if r.URL.Path == "/v2.1/os-quota-sets/"+project+"/detail" {
			set[x.key] = map[string]any{"limit": limitOrUnlimited(x.limit), "in_use": x.inUse, "reserved": 0}
		} else {
			set[x.key] = limitOrUnlimited(x.limit)
		}
	}
	return map[string]any{"quota_set": set}, nil
}
