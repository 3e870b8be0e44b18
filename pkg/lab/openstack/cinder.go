package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Cinder's microversion range (the real lab's Zed) and its volume type.
const (
	cinderMaxMinor = 70
	volumeType     = "fake"
)

func cinderError(w http.ResponseWriter, e *apiError) {
	if e.code == http.StatusRequestEntityTooLarge {
		writeJSON(w, e.code, map[string]any{"overLimit": map[string]any{"code": e.code, "message": e.msg, "retryAfter": "0"}})
		return
	}
	novaError(w, e)
}

// cinderCheck checks the microversion and the project in the path, and
// answers with the microversion.
func cinderCheck(c *call) *apiError {
	v := c.r.Header.Get("X-OpenStack-Volume-API-Version")
	if h := c.r.Header.Get("OpenStack-API-Version"); h != "" {
		if svc, ver, ok := strings.Cut(strings.TrimSpace(h), " "); ok && strings.EqualFold(svc, "volume") {
			v = ver
		}
	}
	if v == "latest" {
		v = fmt.Sprintf("3.%d", cinderMaxMinor)
	}
	if v != "" {
		major, minor, _ := strings.Cut(v, ".")
		n, err := strconv.Atoi(minor)
		if major != "3" || err != nil || n > cinderMaxMinor {
			return errf(http.StatusNotAcceptable, "", "Version %s is not supported by the API. Minimum is 3.0 and maximum is 3.%d.", v, cinderMaxMinor)
		}
		c.mv = n
	}
	if c.r.PathValue("project") != c.t.project && !c.t.admin() {
		return errf(http.StatusForbidden, "", "Policy doesn't allow volume:get_all to be performed.")
	}
	c.w.Header().Set("OpenStack-API-Version", fmt.Sprintf("volume 3.%d", c.mv))
	c.w.Header().Set("Vary", "OpenStack-API-Version")
	return nil
}

func (s *Cloud) cinderMux() http.Handler {
	mux := http.NewServeMux()
	version := map[string]any{
		"id": "v3.0", "status": "CURRENT", "version": fmt.Sprintf("3.%d", cinderMaxMinor), "min_version": "3.0",
		"updated": "2022-08-31T00:00:00Z", "links": []any{map[string]any{"rel": "self", "href": s.URL + VolumePrefix + "/v3/"}},
		"media-types": []any{map[string]any{"base": "application/json", "type": "application/vnd.openstack.volume+json;version=3"}},
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": []any{version}})
	})
	getBoth(mux, "/v3", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{version}})
	}))
	mux.HandleFunc("GET /v3/{project}/volumes", s.cinder(s.listVolumes))
	mux.HandleFunc("GET /v3/{project}/volumes/detail", s.cinder(s.listVolumes))
	mux.HandleFunc("POST /v3/{project}/volumes", s.cinder(s.createVolume))
	mux.HandleFunc("GET /v3/{project}/volumes/{id}", s.cinder(s.showVolume))
	mux.HandleFunc("PUT /v3/{project}/volumes/{id}", s.cinder(s.updateVolume))
	mux.HandleFunc("DELETE /v3/{project}/volumes/{id}", s.cinder(s.deleteVolume))
	mux.HandleFunc("GET /v3/{project}/types", s.cinder(func(*call) (any, error) {
		return map[string]any{"volume_types": []any{map[string]any{
			"id": stableID("volume-type", volumeType), "name": volumeType, "description": nil, "is_public": true,
			"extra_specs": map[string]any{"volume_backend_name": volumeType}, "os-volume-type-access:is_public": true, "qos_specs_id": nil,
		}}}, nil
	}))
	mux.HandleFunc("GET /v3/{project}/limits", s.cinder(s.volumeLimits))
	mux.HandleFunc("/", s.catchAll(Cinder))
	return mux
}

func (c *state) volume(id string, t *token) (*Volume, *apiError) {
	v, ok := c.volumes[id]
	if !ok || !visible(t, v.ProjectID) {
		return nil, errf(http.StatusNotFound, "", "Volume %s could not be found.", id)
	}
	return v, nil
}

func (s *Cloud) volumeView(v *Volume, t *token, mv int) map[string]any {
	c := s.st
	attachments := []any{}
	if v.ServerID != "" && (v.Status == "in-use" || v.Status == "attaching") {
		attachments = append(attachments, map[string]any{
			"id": v.ID, "volume_id": v.ID, "server_id": v.ServerID, "attachment_id": stableID("attachment", v.ID),
			"attached_at": fmtTime(v.Updated, timeCinder), "host_name": "oslab", "device": v.Device,
		})
	}
	out := map[string]any{
		"id": v.ID, "name": v.Name, "description": nilIfEmpty(v.Description), "status": v.Status, "size": v.Size,
		"availability_zone": v.Zone, "created_at": fmtTime(v.Created, timeCinder), "updated_at": fmtTime(v.Updated, timeCinder),
		"attachments": attachments, "bootable": strconv.FormatBool(v.Bootable), "encrypted": false, "multiattach": false,
		"metadata": v.Metadata, "replication_status": nil, "snapshot_id": nil, "source_volid": nil, "user_id": v.UserID,
		"volume_type": volumeType, "consistencygroup_id": nil, "migration_status": nil,
		"links": []any{map[string]any{"rel": "self", "href": s.URL + VolumePrefix + "/v3/" + v.ProjectID + "/volumes/" + v.ID}},
	}
	if img, ok := c.images[v.ImageID]; ok {
		md := map[string]string{
			"image_id": img.ID, "image_name": img.Name, "checksum": img.Checksum, "container_format": img.ContainerFormat,
			"disk_format": img.DiskFormat, "min_disk": strconv.Itoa(img.MinDisk), "min_ram": strconv.Itoa(img.MinRAM), "size": strconv.FormatInt(img.Size, 10),
		}
		maps.Copy(md, img.Properties)
		out["volume_image_metadata"] = md
	}
	if t.admin() {
		out["os-vol-tenant-attr:tenant_id"], out["os-vol-host-attr:host"] = v.ProjectID, "oslab@fake#fake"
		out["os-vol-mig-status-attr:migstat"], out["os-vol-mig-status-attr:name_id"] = nil, nil
	}
	for _, f := range []struct {
		min int
		key string
		val any
	}{
		{13, "group_id", nil},
		{48, "shared_targets", false},
		{48, "service_uuid", stableID("cinder-volume")},
		{63, "volume_type_id", stableID("volume-type", volumeType)},
		{64, "encryption_key_id", nil},
		{65, "consumes_quota", true},
	} {
		if mv >= f.min {
			out[f.key] = f.val
		}
	}
	return out
}

func (s *Cloud) showVolume(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	v, e := c.volume(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	return map[string]any{"volume": s.volumeView(v, t, mv)}, nil
}

func (s *Cloud) listVolumes(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	q := r.URL.Query()
	all := t.admin() && q.Has("all_tenants") && q.Get("all_tenants") != "0" && q.Get("all_tenants") != "false"
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	vols := sortedValues(c.volumes, func(x *Volume) int64 { return x.seq })
	slices.Reverse(vols)
	var out []*Volume
	for _, v := range vols {
		if (v.ProjectID == r.PathValue("project") || all) && (!q.Has("name") || q.Get("name") == v.Name) && (!q.Has("status") || q.Get("status") == v.Status) {
			out = append(out, v)
		}
	}
	page, next := paginate(r, out, func(x *Volume) string { return x.ID })
	views := make([]any, 0, len(page))
	for _, v := range page {
		if strings.HasSuffix(r.URL.Path, "/detail") {
			views = append(views, s.volumeView(v, t, mv))
		} else {
			views = append(views, map[string]any{"id": v.ID, "name": v.Name, "links": s.volumeView(v, t, mv)["links"]})
		}
	}
	resp := map[string]any{"volumes": views}
	if next != "" {
		resp["volumes_links"] = []any{map[string]any{"rel": "next", "href": nextLink(s.URL+VolumePrefix, r, next)}}
	}
	return resp, nil
}

func (s *Cloud) createVolume(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	body, err := readJSON(r)
	spec := obj(body, "volume")
	if err != nil || spec == nil {
		return nil, errf(http.StatusBadRequest, "", "Missing required element 'volume' in request body.")
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	v, e := c.newVolume(spec, t)
	if e != nil {
		return nil, e
	}
	v.meta = c.newMeta()
	c.volumes[v.ID] = v
	c.after(c.cfg.VolumeDelay, func() {
		if v.Status == "creating" {
			v.Status = "available"
			v.touch()
		}
	})
	return reply{status: http.StatusAccepted, body: map[string]any{"volume": s.volumeView(v, t, mv)}}, nil
}

// newVolume validates a volume POST; callers hold the lock.
func (c *state) newVolume(spec map[string]any, t *token) (*Volume, *apiError) {
	size := intOr(spec, "size", 0)
	if size < 1 {
		return nil, invalid("size", spec["size"], fmt.Sprintf("%v is less than the minimum of 1", spec["size"]))
	}
	v := &Volume{
		ID: newUUID(), ProjectID: t.project, UserID: t.user, Name: str(spec, "name"), Description: str(spec, "description"),
		Status: "creating", Size: size, Zone: c.cfg.Zones[0], VolumeType: volumeType, Metadata: map[string]string{},
	}
	if typ := str(spec, "volume_type"); typ != "" && typ != volumeType && typ != stableID("volume-type", volumeType) {
		return nil, errf(http.StatusNotFound, "", "Volume type with name %s could not be found.", typ)
	}
	if az := str(spec, "availability_zone"); az != "" {
		if !slices.Contains(c.cfg.Zones, az) {
			return nil, errf(http.StatusBadRequest, "", "Invalid input received: Availability zone '%s' is invalid.", az)
		}
		v.Zone = az
	}
	if md, ok := spec["metadata"].(map[string]any); ok {
		for k, val := range md {
			v.Metadata[k] = fmt.Sprint(val)
		}
	}
	if ref := str(spec, "imageRef"); ref != "" {
		img, ok := c.image(ref, t)
		if !ok || img.Status != "active" {
			return nil, errf(http.StatusBadRequest, "", "Invalid input received: Invalid image identifier or unable to access requested image.")
		}
		if img.MinDisk > size {
			return nil, errf(http.StatusBadRequest, "", "Invalid input received: Volume size %dGB cannot be smaller than the image minDisk size %dGB.", size, img.MinDisk)
		}
		if gb := (img.Size + 1<<30 - 1) >> 30; gb > int64(size) {
			return nil, errf(http.StatusBadRequest, "", "Invalid input received: Size of specified image %dGB is larger than volume size %dGB.", gb, size)
		}
		v.ImageID, v.Bootable = img.ID, true
	}
	q := c.quota(t.project)
	used, gigs := 0, 0
	for _, x := range c.volumes {
		if x.ProjectID == t.project {
			used, gigs = used+1, gigs+x.Size
		}
	}
	if over(q.Volumes, used, 1) {
		return nil, errf(http.StatusRequestEntityTooLarge, "", "VolumeLimitExceeded: Maximum number of volumes allowed (%d) exceeded for quota 'volumes'.", q.Volumes)
	}
	if over(q.Gigabytes, gigs, size) {
		return nil, errf(http.StatusRequestEntityTooLarge, "", "VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota. Requested %dG, quota is %dG and %dG has been consumed.", size, q.Gigabytes, gigs)
	}
	return v, nil
}

func (s *Cloud) updateVolume(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	body, err := readJSON(r)
	spec := obj(body, "volume")
	if err != nil || spec == nil {
		return nil, errf(http.StatusBadRequest, "", "Missing required element 'volume' in request body.")
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	v, e := c.volume(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	v.Name, v.Description = strOr(spec, "name", v.Name), strOr(spec, "description", v.Description)
	if md, ok := spec["metadata"].(map[string]any); ok {
		v.Metadata = map[string]string{}
		for k, val := range md {
			v.Metadata[k] = fmt.Sprint(val)
		}
	}
	v.touch()
	return map[string]any{"volume": s.volumeView(v, t, mv)}, nil
}

func (s *Cloud) deleteVolume(cl *call) (any, error) {
	r, t := cl.r, cl.t
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	v, e := c.volume(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	if v.ServerID != "" || !slices.Contains([]string{"available", "error", "error_restoring", "error_extending", "error_managing"}, v.Status) {
		return nil, errf(http.StatusBadRequest, "", "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.")
	}
	v.Status = "deleting"
	v.touch()
	c.after(c.cfg.VolumeDelay, func() { delete(c.volumes, v.ID) })
	return reply{status: http.StatusAccepted}, nil
}

func (s *Cloud) volumeLimits(cl *call) (any, error) {
	r := cl.r
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	project := r.PathValue("project")
	q := c.quota(project)
	used, gigs := 0, 0
	for _, x := range c.volumes {
		if x.ProjectID == project {
			used, gigs = used+1, gigs+x.Size
		}
	}
	return map[string]any{"limits": map[string]any{"rate": []any{}, "absolute": map[string]any{
		"maxTotalVolumes": limitOrUnlimited(q.Volumes), "maxTotalVolumeGigabytes": limitOrUnlimited(q.Gigabytes), "totalVolumesUsed": used,
		"totalGigabytesUsed": gigs, "maxTotalSnapshots": -1, "totalSnapshotsUsed": 0, "maxTotalBackups": -1, "totalBackupsUsed": 0,
		"maxTotalBackupGigabytes": -1, "totalBackupGigabytesUsed": 0,
	}}}, nil
}
