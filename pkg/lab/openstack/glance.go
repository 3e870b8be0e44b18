package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Glance's v2 minor versions (the real lab's maximum is v2.15).
const glanceMaxMinor = 15

// glanceError writes e as Glance's plain-text error page.
func glanceError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(e.code)
	_, _ = fmt.Fprintf(w, "%d %s\n\n%s\n\n   ", e.code, http.StatusText(e.code), e.msg)
}

func (s *Cloud) glanceMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		var vs []any
		for minor := glanceMaxMinor; minor >= 0; minor-- {
			status := "SUPPORTED"
			if minor == glanceMaxMinor {
				status = "CURRENT"
			}
			vs = append(vs, map[string]any{
				"id": fmt.Sprintf("v2.%d", minor), "status": status,
				"links": []any{map[string]any{"rel": "self", "href": s.URL + ImagePrefix + "/v2/"}},
			})
		}
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": vs})
	})
	mux.HandleFunc("GET /v2/images", s.glance(s.listImages))
	mux.HandleFunc("POST /v2/images", s.glance(s.createImage))
	mux.HandleFunc("GET /v2/images/{id}", s.glance(s.showImage))
	mux.HandleFunc("PATCH /v2/images/{id}", s.glance(s.patchImage))
	mux.HandleFunc("DELETE /v2/images/{id}", s.glance(s.deleteImage))
	mux.HandleFunc("PUT /v2/images/{id}/file", s.glance(s.uploadImage))
	mux.HandleFunc("GET /v2/images/{id}/file", s.glance(s.downloadImage))
	mux.HandleFunc("PUT /v2/images/{id}/stage", s.glance(s.uploadImage))
	mux.HandleFunc("POST /v2/images/{id}/import", s.glance(s.importImage))
	mux.HandleFunc("PUT /v2/images/{id}/tags/{tag}", s.glance(s.imageTag))
	mux.HandleFunc("DELETE /v2/images/{id}/tags/{tag}", s.glance(s.imageTag))
	mux.HandleFunc("GET /v2/info/import", s.glance(func(*call) (any, error) {
		return map[string]any{"import-methods": map[string]any{
			"description": "Import methods available.", "type": "array", "value": []string{"glance-direct", "web-download", "copy-image"},
		}}, nil
	}))
	mux.HandleFunc("GET /v2/info/stores", s.glance(func(*call) (any, error) {
		return map[string]any{"stores": []any{map[string]any{"id": "file", "default": true, "description": ""}}}, nil
	}))
	mux.HandleFunc("/", s.catchAll(Glance))
	return mux
}

// readOnlyImage are the attributes a client may not set.
func readOnlyImage() []string {
	return []string{"status", "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value", "created_at", "updated_at", "self", "file", "schema", "stores", "direct_url", "locations"}
}

func (c *state) imageVisible(img *Image, t *token) bool {
	return t.admin() || img.Owner == t.project || img.Visibility == "public" || img.Visibility == "community"
}

func imageView(img *Image) map[string]any {
	orNil := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var size any
	if img.Status == "active" {
		size = img.Size
	}
	v := map[string]any{}
	for k, val := range img.Properties { // map[string]string into map[string]any
		v[k] = val
	}
	maps.Copy(v, map[string]any{
		"id": img.ID, "name": orNil(img.Name), "status": img.Status, "visibility": img.Visibility, "protected": img.Protected,
		"tags": sortedTags(img.Tags), "disk_format": orNil(img.DiskFormat), "container_format": orNil(img.ContainerFormat),
		"min_disk": img.MinDisk, "min_ram": img.MinRAM, "size": size, "virtual_size": nil, "checksum": orNil(img.Checksum),
		"os_hash_algo": orNil(img.HashAlgo), "os_hash_value": orNil(img.HashValue), "owner": img.Owner, "os_hidden": false,
		"created_at": fmtTime(img.Created, timeNova), "updated_at": fmtTime(img.Updated, timeNova),
		"self": "/v2/images/" + img.ID, "file": "/v2/images/" + img.ID + "/file", "schema": "/v2/schemas/image",
	})
	if img.Status == "active" {
		v["stores"] = "file"
	}
	return v
}

func (c *state) image(id string, t *token) (*Image, bool) {
	img, ok := c.images[id]
	return img, ok && c.imageVisible(img, t)
}

func (s *Cloud) showImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.image(r.PathValue("id"), t)
	if !ok {
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	}
	return imageView(img), nil
}

func (s *Cloud) listImages(cl *call) (any, error) {
	r, t := cl.r, cl.t
	q := r.URL.Query()
	c := s.st
	c.mu.Lock()
	imgs := sortedValues(c.images, func(x *Image) int64 { return x.seq })
	slices.Reverse(imgs) // newest first, Glance's default sort
	var out []*Image
	for _, img := range imgs {
		if c.imageListed(img, t, q) {
			out = append(out, img)
		}
	}
	page, next := paginate(r, out, func(x *Image) string { return x.ID })
	views := make([]any, 0, len(page))
	for _, img := range page {
		views = append(views, imageView(img))
	}
	c.mu.Unlock()
	resp := map[string]any{"images": views, "first": "/v2/images", "schema": "/v2/schemas/images"}
	if next != "" {
		q.Set("marker", next)
		resp["next"] = "/v2/images?" + q.Encode()
	}
	return resp, nil
}

// imageListed applies Glance's list filters; callers hold the lock.
func (c *state) imageListed(img *Image, t *token, q map[string][]string) bool {
	if !c.imageVisible(img, t) {
		return false
	}
	vis := first(q["visibility"])
	if (vis == "" && img.Visibility == "community" && img.Owner != t.project) || (vis != "" && vis != "all" && vis != img.Visibility) {
		return false
	}
	for _, tag := range q["tag"] {
		if !slices.Contains(img.Tags, tag) {
			return false
		}
	}
	view := imageView(img)
	for k, want := range q {
		switch k {
		case "visibility", "tag", "limit", "marker", "sort", "sort_key", "sort_dir", "member_status":
			continue
		case "id":
			if ids, ok := strings.CutPrefix(want[0], "in:"); ok && !slices.Contains(strings.Split(ids, ","), img.ID) {
				return false
			}
			continue
		}
		if fmt.Sprint(view[k]) != want[0] {
			return false
		}
	}
	return true
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func validFormats(disk, container string) string {
	if disk != "" && !slices.Contains([]string{"ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop"}, disk) {
		return fmt.Sprintf("Invalid value '%s' for parameter 'disk_format': The disk format %s is not supported.", disk, disk)
	}
	if container != "" && !slices.Contains([]string{"ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"}, container) {
		return fmt.Sprintf("Invalid value '%s' for parameter 'container_format': The container format %s is not supported.", container, container)
	}
	return ""
}

func (s *Cloud) createImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	body, err := readJSON(r)
	if err != nil {
		return nil, errf(http.StatusBadRequest, "", "%s", err)
	}
	img := &Image{ID: newUUID(), Owner: t.project, Status: "queued", Visibility: "shared", Properties: map[string]string{}}
	if code, msg := setImageAttrs(img, body, t, true); code != 0 {
		return nil, errf(code, "", "%s", msg)
	}
	c := s.st
	c.mu.Lock()
	if _, taken := c.images[img.ID]; taken {
		c.mu.Unlock()
		return nil, errf(http.StatusConflict, "", "Image with identifier %s already exists!", img.ID)
	}
	img.meta = c.newMeta()
	c.images[img.ID] = img
	v := imageView(img)
	c.mu.Unlock()
	h := cl.w.Header()
	h.Set("Location", s.URL+ImagePrefix+"/v2/images/"+img.ID)
	h.Set("OpenStack-image-import-methods", "glance-direct,web-download,copy-image")
	h.Set("OpenStack-image-store-ids", "file")
	return created(v), nil
}

// setImageAttrs applies create attributes (or one PATCH value) to img.
func setImageAttrs(img *Image, attrs map[string]any, t *token, create bool) (int, string) {
	for k, v := range attrs {
		if slices.Contains(readOnlyImage(), k) || (k == "owner" && !t.admin()) || (k == "id" && !create) {
			return http.StatusForbidden, fmt.Sprintf("Attribute '%s' is read-only.", k)
		}
		switch k {
		case "id", "name", "disk_format", "container_format", "visibility", "owner":
			sv, _ := v.(string)
			*map[string]*string{
				"id": &img.ID, "name": &img.Name, "disk_format": &img.DiskFormat, "container_format": &img.ContainerFormat,
				"visibility": &img.Visibility, "owner": &img.Owner,
			}[k] = sv
		case "min_disk", "min_ram":
			*map[string]*int{"min_disk": &img.MinDisk, "min_ram": &img.MinRAM}[k] = intOr(attrs, k, 0)
		case "protected":
			img.Protected = boolOr(attrs, k, false)
		case "tags":
			tags, ok := strList(attrs, k)
			if !ok {
				return http.StatusBadRequest, "Provided object does not match schema 'image': tags is not of type 'array'"
			}
			img.Tags = sortedTags(tags)
		default:
			sv, ok := v.(string)
			if !ok {
				return http.StatusBadRequest, fmt.Sprintf("Provided object does not match schema 'image': %v is not of type 'string'", v)
			}
			img.Properties[k] = sv
		}
	}
	if msg := validFormats(img.DiskFormat, img.ContainerFormat); msg != "" {
		return http.StatusBadRequest, msg
	}
	if !slices.Contains([]string{"public", "private", "shared", "community"}, img.Visibility) {
		return http.StatusBadRequest, fmt.Sprintf("Invalid visibility value: %s", img.Visibility)
	}
	if img.Visibility == "public" && !t.admin() {
		return http.StatusForbidden, "You are not authorized to complete publicize_image action."
	}
	return 0, ""
}

func (s *Cloud) patchImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	var ops []map[string]any
	if err := decodeBody(r, &ops); err != nil {
		return nil, errf(http.StatusBadRequest, "", "%s", err)
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.image(r.PathValue("id"), t)
	if !ok || (img.Owner != t.project && !t.admin()) {
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	}
	next := *img
	next.Properties, next.Tags = maps.Clone(img.Properties), slices.Clone(img.Tags)
	for _, op := range ops {
		key := strings.TrimPrefix(str(op, "path"), "/")
		switch str(op, "op") {
		case "add", "replace":
			if _, exists := imageView(&next)[key]; str(op, "op") == "replace" && !exists {
				return nil, errf(http.StatusConflict, "", "Property %s does not exist.", key)
			}
			if code, msg := setImageAttrs(&next, map[string]any{key: op["value"]}, t, false); code != 0 {
				return nil, errf(code, "", "%s", msg)
			}
		case "remove":
			if _, exists := next.Properties[key]; !exists {
				return nil, errf(http.StatusConflict, "", "Property %s does not exist.", key)
			}
			delete(next.Properties, key)
		default:
			return nil, errf(http.StatusBadRequest, "", "Unable to find '%s' in JSON Schema change", str(op, "op"))
		}
	}
	*img = next
	img.touch()
	return imageView(img), nil
}

func (s *Cloud) deleteImage(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.image(r.PathValue("id"), t)
	switch {
	case !ok || (img.Owner != t.project && !t.admin()):
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	case img.Protected:
		return nil, errf(http.StatusForbidden, "", "Image %s is protected and cannot be deleted.", img.ID)
	}
	delete(c.images, img.ID)
	return noContent(), nil
}

func (s *Cloud) imageTag(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	img, ok := c.image(r.PathValue("id"), t)
	tag := r.PathValue("tag")
	switch {
	case !ok || (img.Owner != t.project && !t.admin()):
		return nil, errf(http.StatusNotFound, "", "No image found with ID %s", r.PathValue("id"))
	case r.Method == http.MethodPut:
		img.Tags = sortedTags(append(img.Tags, tag))
	case !slices.Contains(img.Tags, tag):
		return nil, errf(http.StatusNotFound, "", "Tag %s not found", tag)
	default:
		img.Tags = slices.DeleteFunc(img.Tags, func(x string) bool { return x == tag })
	}
	img.touch()
	return reply{status: http.StatusNoContent}, nil
}
