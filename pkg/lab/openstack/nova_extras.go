package openstack

import (
	"maps"
	"net/http"
	"slices"
)

// serverTags serves /servers/{id}/tags[/{tag}] (microversion ≥ 2.26).
func (s *Cloud) serverTags(w http.ResponseWriter, r *http.Request, t *token, mv int) {
	if mv < 26 {
		novaError(w, errf(http.StatusNotFound, "", "The resource could not be found."))
		return
	}
	var replace []string
	tag := r.PathValue("tag")
	if r.Method == http.MethodPut && tag == "" {
		body, err := readJSON(r)
		tags, ok := strList(body, "tags")
		if err != nil || !ok || body["tags"] == nil {
			novaError(w, invalid("tags", body["tags"], "is not of type 'array'"))
			return
		}
		replace = tags
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e == nil && r.Method != http.MethodGet && srv.VMState != "active" && srv.VMState != "error" {
		action := map[string]string{http.MethodPut: "update tag", http.MethodDelete: "delete tag"}[r.Method]
		if tag == "" {
			action += "s"
		}
		e = errf(http.StatusConflict, "", "Cannot '%s' instance %s while it is in vm_state %s", action, srv.ID, srv.VMState)
	}
	for _, x := range append(slices.Clone(replace), tag) {
		if e == nil && x != "" {
			e = validServerTag(x)
		}
	}
	if e != nil {
		novaError(w, e)
		return
	}
	has := slices.Contains(srv.Tags, tag)
	switch {
	case r.Method == http.MethodGet && tag == "":
		writeJSON(w, http.StatusOK, map[string]any{"tags": sortedTags(srv.Tags)})
		return
	case tag != "" && !has && r.Method != http.MethodPut:
		novaError(w, errf(http.StatusNotFound, "", "Instance %s has no tag '%s'", srv.ID, tag))
		return
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method == http.MethodPut && tag == "":
		if len(replace) > 50 {
			novaError(w, errf(http.StatusBadRequest, "", "The number of tags exceeded the per-server limit 50"))
			return
		}
		srv.Tags = sortedTags(replace)
		writeJSON(w, http.StatusOK, map[string]any{"tags": srv.Tags})
	case r.Method == http.MethodPut && has:
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method == http.MethodPut:
		if len(srv.Tags) >= 50 {
			novaError(w, errf(http.StatusBadRequest, "", "The number of tags exceeded the per-server limit 50"))
			return
		}
		srv.Tags = sortedTags(append(srv.Tags, tag))
		w.Header().Set("Location", s.URL+ComputePrefix+"/v2.1/servers/"+srv.ID+"/tags/"+tag)
		w.WriteHeader(http.StatusCreated)
	case tag == "":
		srv.Tags = nil
		w.WriteHeader(http.StatusNoContent)
	default:
		srv.Tags = slices.DeleteFunc(srv.Tags, func(x string) bool { return x == tag })
		w.WriteHeader(http.StatusNoContent)
	}
	srv.touch()
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

func (s *Cloud) listFlavors(w http.ResponseWriter, r *http.Request, _ *token, mv int) {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []any{}
	for _, f := range c.flavors {
		out = append(out, s.flavorView(f, mv, r.URL.Path == "/v2.1/flavors/detail"))
	}
	writeJSON(w, http.StatusOK, map[string]any{"flavors": out})
}

func (s *Cloud) showFlavor(w http.ResponseWriter, r *http.Request, _ *token, mv int) {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.flavors {
		if f.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, map[string]any{"flavor": s.flavorView(f, mv, true)})
			return
		}
	}
	novaError(w, errf(http.StatusNotFound, "", "Flavor %s could not be found.", r.PathValue("id")))
}

func (s *Cloud) zones(w http.ResponseWriter, r *http.Request, t *token, _ int) {
	detail := r.URL.Path == "/v2.1/os-availability-zone/detail"
	if detail && !t.admin() {
		novaError(w, errf(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:os-availability-zone:detail to be performed."))
		return
	}
	out := []any{}
	for _, z := range s.cfg.Zones {
		var hosts any
		if detail {
			hosts = map[string]any{"oslab": map[string]any{"nova-compute": map[string]any{"available": true, "active": true, "updated_at": nil}}}
		}
		out = append(out, map[string]any{"zoneName": z, "zoneState": map[string]any{"available": true}, "hosts": hosts})
	}
	writeJSON(w, http.StatusOK, map[string]any{"availabilityZoneInfo": out})
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

func (s *Cloud) limits(w http.ResponseWriter, _ *http.Request, t *token, mv int) {
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
	writeJSON(w, http.StatusOK, map[string]any{"limits": map[string]any{"rate": []any{}, "absolute": abs}})
}

func (s *Cloud) quotaSet(w http.ResponseWriter, r *http.Request, t *token, _ int) {
	project := r.PathValue("project")
	if project != t.project && !t.admin() {
		novaError(w, errf(http.StatusForbidden, "", "Policy doesn't allow os_compute_api:os-quota-sets:show to be performed."))
		return
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
	writeJSON(w, http.StatusOK, map[string]any{"quota_set": set})
}
