package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// apiError is an error a service answers with its own body.
type apiError struct {
	code int
	typ  string // Neutron's exception type, Nova's fault key is derived
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errf(code int, typ, format string, args ...any) *apiError {
	return &apiError{code: code, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func neutronError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.code, map[string]any{"NeutronError": map[string]any{"type": e.typ, "message": e.msg, "detail": ""}})
}

// neutronExtensions are the aliases the real lab's Neutron (Zed, ML2,
// router plugin, port_security) lists.
func (s *Cloud) neutronExtensions() []string {
	ext := []string{
		"agent", "allowed-address-pairs", "binding", "binding-extended", "default-subnetpools", "dns-integration",
		"empty-string-filtering", "ext-gw-mode", "external-net", "extra_dhcp_opt", "extraroute", "extraroute-atomic",
		"filter-validation", "fip-port-details", "ip-substring-filtering", "l3-flavors", "multi-provider", "net-mtu",
		"net-mtu-writable", "network-ip-availability", "pagination", "port-mac-address-regenerate", "port-security",
		"project-id", "provider", "quota_details", "quotas", "revision-if-match", "router", "security-group",
		"security-groups-remote-address-group", "sorting", "standard-attr-description", "standard-attr-revisions",
		"standard-attr-tag", "standard-attr-timestamp", "stateful-security-group", "subnet_allocation",
	}
	if s.cfg.NeutronTagsInPOST {
		ext = append(ext, "tag-creation")
	}
	slices.Sort(ext)
	return ext
}

func (s *Cloud) neutronMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
			"id": "v2.0", "status": "CURRENT", "links": []any{map[string]any{"href": s.URL + NetworkPrefix + "/v2.0/", "rel": "self"}},
		}}})
	})
	getBoth(mux, "/v2.0", s.neutron(neutronResources))
	mux.HandleFunc("GET /v2.0/extensions", s.neutron(s.listExtensions))
	mux.HandleFunc("GET /v2.0/extensions/{alias}", s.neutron(s.showExtension))
	networks().routes(s, mux)
	subnets().routes(s, mux)
	ports().routes(s, mux)
	routers().routes(s, mux)
	floatingIPs().routes(s, mux)
	securityGroups().routes(s, mux)
	securityGroupRules().routes(s, mux)
	mux.HandleFunc("PUT /v2.0/routers/{id}/add_router_interface", s.neutron(routerInterface(true)))
	mux.HandleFunc("PUT /v2.0/routers/{id}/remove_router_interface", s.neutron(routerInterface(false)))
	for _, p := range []string{"GET", "PUT", "DELETE"} {
		mux.HandleFunc(p+" /v2.0/{collection}/{id}/tags", s.neutron(tagsAPI))
		mux.HandleFunc(p+" /v2.0/{collection}/{id}/tags/{tag}", s.neutron(tagsAPI))
	}
	mux.HandleFunc("GET /v2.0/quotas/{project}", s.neutron(neutronQuota))
	mux.HandleFunc("GET /v2.0/quotas/{project}/details", s.neutron(neutronQuota))
	mux.HandleFunc("/", s.catchAll(Neutron))
	return mux
}

// neutronResources serves GET /v2.0: the collections.
func neutronResources(*call) (any, error) {
	var res []any
	for _, c := range []string{"network", "subnet", "port", "router", "floatingip", "security_group", "security_group_rule"} {
		res = append(res, map[string]any{"name": c, "collection": c + "s", "links": []any{}})
	}
	return map[string]any{"resources": res}, nil
}

func (s *Cloud) listExtensions(*call) (any, error) {
	var out []any
	for _, a := range s.neutronExtensions() {
		out = append(out, map[string]any{"alias": a, "name": a, "description": a, "updated": "2022-10-01T10:00:00-00:00", "links": []any{}})
	}
	return map[string]any{"extensions": out}, nil
}

func (s *Cloud) showExtension(c *call) (any, error) {
	a := c.r.PathValue("alias")
	if !slices.Contains(s.neutronExtensions(), a) {
		return nil, errf(http.StatusNotFound, "ExtensionNotFound", "Extension with alias %s does not exist", a)
	}
	return map[string]any{"extension": map[string]any{"alias": a, "name": a, "description": a, "links": []any{}}}, nil
}

// checkAttrs refuses attributes a POST (create) or PUT may not carry.
func (c *state) checkAttrs(spec map[string]any, create bool, allowed, readOnly []string) *apiError {
	if spec == nil {
		return errf(http.StatusBadRequest, "HTTPBadRequest", "Resource body required")
	}
	var unknown []string
	for k := range spec {
		switch {
		case k == "tags" && create && c.cfg.NeutronTagsInPOST:
		case k == "tags" && create:
			return errf(http.StatusBadRequest, "HTTPBadRequest", "Attribute 'tags' not allowed in POST")
		case !create && (slices.Contains(readOnly, k) || k == "tags" || k == "id" || k == "project_id" || k == "tenant_id"):
			return errf(http.StatusBadRequest, "HTTPBadRequest", "Cannot update read-only attribute %s", k)
		case slices.Contains(allowed, k), create && (k == "project_id" || k == "tenant_id" || slices.Contains(readOnly, k)):
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return errf(http.StatusBadRequest, "HTTPBadRequest", "Unrecognized attribute(s) '%s'", strings.Join(unknown, ", "))
	}
	if tags, ok := strList(spec, "tags"); !ok {
		return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: tags must be a list of strings.")
	} else if e := validTags(tags); e != nil {
		return e
	}
	return nil
}

func validTags(tags []string) *apiError {
	for _, t := range tags {
		if len(t) > 60 {
			return errf(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: '%s' exceeds maximum length of 60.", t)
		}
	}
	return nil
}

// ownerOf returns the project a new resource belongs to.
func ownerOf(spec map[string]any, t *token) (string, *apiError) {
	p := str(spec, "project_id")
	if p == "" {
		p = str(spec, "tenant_id")
	}
	if p == "" || p == t.project {
		return t.project, nil
	}
	if !t.admin() {
		return "", errf(http.StatusForbidden, "HTTPForbidden", "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
	}
	return p, nil
}

// baseView holds the standard attributes of every Neutron resource.
func baseView(id, name, project, description string, tags []string, m meta) map[string]any {
	v := map[string]any{
		"id": id, "project_id": project, "tenant_id": project, "description": description,
		"tags": sortedTags(tags), "created_at": fmtTime(m.Created, timeNova), "updated_at": fmtTime(m.Updated, timeNova),
		"revision_number": m.Revision,
	}
	if name != "\x00" {
		v["name"] = name
	}
	return v
}

// reservedQuery reports query parameters that are not attribute filters.
func reservedQuery(k string) bool {
	switch k {
	case "fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse", "tags", "tags-any", "not-tags", "not-tags-any":
		return true
	}
	return false
}

// list filters, projects and paginates views of one collection.
func (c *call) list(collection string, attrs []string, views []map[string]any) (any, error) {
	q := c.r.URL.Query()
	for k := range q {
		if !reservedQuery(k) && k != "fixed_ips" && !slices.Contains(attrs, k) {
			return nil, errf(http.StatusBadRequest, "HTTPBadRequest", "[%s] is invalid attribute for filtering", k)
		}
	}
	if q.Has("tags") && q.Has("tags-any") {
		// Zed joins the tag table twice under one alias: MySQL refuses the
		// query ("Not unique table/alias: 'tags'") and Neutron answers 500.
		return nil, errf(http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request.")
	}
	out := make([]map[string]any, 0, len(views))
	for _, v := range views {
		if matchFilters(c.r, v) {
			out = append(out, v)
		}
	}
	page, next := paginate(c.r, out, func(v map[string]any) string { return v["id"].(string) })
	if fields := q["fields"]; len(fields) > 0 {
		for i, v := range page {
			page[i] = maps.Collect(func(yield func(string, any) bool) {
				for k, val := range v {
					if slices.Contains(fields, k) && !yield(k, val) {
						return
					}
				}
			})
		}
	}
	resp := map[string]any{collection: page}
	if next != "" {
		resp[collection+"_links"] = []any{map[string]any{"rel": "next", "href": nextLink(c.s.URL+NetworkPrefix, c.r, next)}}
	}
	return resp, nil
}

// matchFilters applies attribute filters (several values: any matches).
func matchFilters(r *http.Request, v map[string]any) bool {
	tags, _ := v["tags"].([]string)
	if !tagsMatch(r, tags) {
		return false
	}
	for k, want := range r.URL.Query() {
		if reservedQuery(k) {
			continue
		}
		if !slices.ContainsFunc(want, func(w string) bool { return valueMatches(v[k], w) }) {
			return false
		}
	}
	return true
}

func valueMatches(have any, want string) bool {
	switch h := have.(type) {
	case string:
		return h == want
	case bool:
		return fmt.Sprint(h) == strings.ToLower(want)
	case int:
		return fmt.Sprint(h) == want
	case []string:
		return slices.Contains(h, want)
	case []FixedIP:
		k, val, _ := strings.Cut(want, "=")
		return slices.ContainsFunc(h, func(f FixedIP) bool {
			return (k == "ip_address" && f.IPAddress == val) || (k == "subnet_id" && f.SubnetID == val) ||
				(k == "ip_address_substr" && strings.Contains(f.IPAddress, val))
		})
	case nil:
		return want == ""
	default:
		return fmt.Sprint(h) == want
	}
}

// ifMatch enforces revision-if-match ("If-Match: revision_number=N").
func ifMatch(r *http.Request, m meta) *apiError {
	want, ok := strings.CutPrefix(r.Header.Get("If-Match"), "revision_number=")
	if ok && want != strconv.Itoa(m.Revision) {
		return errf(http.StatusPreconditionFailed, "RevisionNumberConstraintFailed", "Constrained to %s, but current revision is %d", want, m.Revision)
	}
	return nil
}

// visible reports whether t may see a resource of project.
func visible(t *token, project string) bool { return t.admin() || project == t.project }
