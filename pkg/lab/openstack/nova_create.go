package openstack

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// maxUserData is Nova's limit on user_data, counted after base64.
const maxUserData = 65535

// serverKeys are the properties a server POST may carry at microversion mv.
func serverKeys(mv int) []string {
	k := []string{
		"name", "imageRef", "flavorRef", "networks", "block_device_mapping_v2", "block_device_mapping", "config_drive",
		"user_data", "metadata", "availability_zone", "security_groups", "key_name", "adminPass", "accessIPv4", "accessIPv6",
		"OS-DCF:diskConfig", "min_count", "max_count", "return_reservation_id",
	}
	if mv >= 19 {
		k = append(k, "description")
	}
	if mv >= 52 {
		k = append(k, "tags")
	}
	if mv < 57 {
		k = append(k, "personality")
	}
	return k
}

// invalid is Nova's JSON-schema error at a field.
func invalid(field string, value any, msg string) *apiError {
	b, _ := json.Marshal(value)
	return errf(http.StatusBadRequest, "", "Invalid input for field/attribute %s. Value: %s. %s", field, b, msg)
}

// bootPlan is a validated server POST.
type bootPlan struct {
	srv    *Server
	flavor Flavor
	ports  []*Port       // given ports
	nets   []portRequest // networks to create ports on
	volume *Volume       // volume to create from an image
	attach *Volume       // existing volume to boot from
	dot    bool
}

type portRequest struct {
	network *Network
	fixedIP string
}

func (s *Cloud) createServer(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	body, err := readJSON(r)
	spec := obj(body, "server")
	if err != nil || spec == nil {
		return nil, errf(http.StatusBadRequest, "", "Invalid input for field/attribute server. Value: None. None is not of type 'object'")
	}
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	plan, e := c.planServer(spec, t, mv)
	if e != nil {
		return nil, e
	}
	if e := c.checkComputeQuota(t.project, plan.flavor); e != nil {
		return nil, e
	}
	srv := c.startServer(plan, t)
	cl.w.Header().Set("Location", s.serverLinks(srv.ID)[0].(map[string]any)["href"].(string))
	sgs := []any{}
	for _, name := range c.serverSGNames(srv) {
		sgs = append(sgs, map[string]any{"name": name})
	}
	return reply{status: http.StatusAccepted, body: map[string]any{"server": map[string]any{
		"id": srv.ID, "links": s.serverLinks(srv.ID), "OS-DCF:diskConfig": "MANUAL", "security_groups": sgs, "adminPass": newHexID()[:12],
	}}}, nil
}

// planServer validates a server POST like Nova does; callers hold the lock.
func (c *state) planServer(spec map[string]any, t *token, mv int) (*bootPlan, *apiError) {
	for k := range spec {
		if !slices.Contains(serverKeys(mv), k) {
			return nil, invalid("server", spec, fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected)", k))
		}
	}
	name, _ := spec["name"].(string)
	if strings.TrimSpace(name) == "" || len(name) > 255 {
		return nil, invalid("server", spec, "'name' is a required property")
	}
	p := &bootPlan{srv: &Server{
		ID: newUUID(), Name: name, ProjectID: t.project, UserID: t.user, Zone: c.cfg.Zones[0],
		Status: "BUILD", VMState: "building", TaskState: "scheduling", ConfigDrive: boolOr(spec, "config_drive", false),
	}}
	steps := []func(map[string]any, *bootPlan, *token, int) *apiError{c.planFlavor, planUserData, planTags, planMetadata, c.planZone, c.planNetworks, c.planDisk}
	for _, step := range steps {
		if e := step(spec, p, t, mv); e != nil {
			return nil, e
		}
	}
	return p, nil
}

func (c *state) planFlavor(spec map[string]any, p *bootPlan, _ *token, _ int) *apiError {
	ref := str(spec, "flavorRef")
	if ref == "" {
		return invalid("server", spec, "'flavorRef' is a required property")
	}
	ref = ref[strings.LastIndex(ref, "/")+1:]
	for _, f := range c.flavors {
		if f.ID == ref {
			p.flavor, p.srv.FlavorID = f, f.ID
			return nil
		}
	}
	return errf(http.StatusBadRequest, "", "Flavor %s could not be found.", ref)
}

func planUserData(spec map[string]any, p *bootPlan, _ *token, _ int) *apiError {
	raw, set := spec["user_data"]
	if !set || raw == nil {
		return nil
	}
	ud, ok := raw.(string)
	if !ok {
		return invalid("user_data", raw, fmt.Sprintf("%v is not of type 'string', 'null'", raw))
	}
	if len(ud) > maxUserData {
		return invalid("user_data", ud, fmt.Sprintf("'%s' is too long", ud))
	}
	if _, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(ud), "")); err != nil {
		return invalid("user_data", ud, fmt.Sprintf("'%s' is not a 'base64'", ud))
	}
	p.srv.UserData = ud
	return nil
}

func planTags(spec map[string]any, p *bootPlan, _ *token, _ int) *apiError {
	tags, ok := strList(spec, "tags")
	if !ok {
		return invalid("tags", spec["tags"], "is not of type 'array'")
	}
	if len(tags) > 50 {
		return invalid("tags", tags, "is too long")
	}
	for _, tag := range tags {
		if e := validServerTag(tag); e != nil {
			return e
		}
	}
	p.srv.Tags = sortedTags(tags)
	return nil
}

func validServerTag(tag string) *apiError {
	if tag == "" || len(tag) > 60 || strings.ContainsAny(tag, "/,") {
		return invalid("0", tag, fmt.Sprintf("'%s' does not match '^[^,/]*$'", tag))
	}
	return nil
}

func planMetadata(spec map[string]any, p *bootPlan, _ *token, _ int) *apiError {
	md, set := spec["metadata"].(map[string]any)
	if _, present := spec["metadata"]; present && !set {
		return invalid("metadata", spec["metadata"], "is not of type 'object'")
	}
	p.srv.Metadata = map[string]string{}
	for k, v := range md {
		sv, ok := v.(string)
		if !ok || len(k) > 255 || len(sv) > 255 {
			return invalid(k, v, "is not of type 'string'")
		}
		p.srv.Metadata[k] = sv
	}
	return nil
}

func (c *state) planZone(spec map[string]any, p *bootPlan, _ *token, _ int) *apiError {
	if az := str(spec, "availability_zone"); az != "" {
		if !slices.Contains(c.cfg.Zones, strings.Split(az, ":")[0]) {
			return errf(http.StatusBadRequest, "", "The requested availability zone is not available")
		}
		p.srv.Zone = strings.Split(az, ":")[0]
	}
	return nil
}

func (c *state) planNetworks(spec map[string]any, p *bootPlan, t *token, mv int) *apiError {
	raw, set := spec["networks"]
	if !set && mv >= 37 {
		return invalid("server", spec, "'networks' is a required property")
	}
	if s, ok := raw.(string); ok && (s == "none" || s == "auto") {
		return nil
	}
	list, _ := raw.([]any)
	for _, item := range list {
		req, _ := item.(map[string]any)
		switch {
		case str(req, "port") != "":
			port, ok := c.ports[str(req, "port")]
			if !ok || !visible(t, port.ProjectID) {
				return errf(http.StatusBadRequest, "", "Port id %s could not be found.", str(req, "port"))
			}
			// a bound port; one bound later fails the build (bindPorts)
			if port.DeviceID != "" || slices.Contains(p.ports, port) {
				return errf(http.StatusConflict, "", "Port %s is still in use.", port.ID)
			}
			p.ports = append(p.ports, port)
		case str(req, "uuid") != "":
			n, e := c.network(str(req, "uuid"), t)
			if e != nil {
				return errf(http.StatusBadRequest, "", "Network %s could not be found.", str(req, "uuid"))
			}
			p.nets = append(p.nets, portRequest{network: n, fixedIP: str(req, "fixed_ip")})
		default:
			return invalid("networks", raw, "Bad networks format")
		}
	}
	return nil
}

func (c *state) planDisk(spec map[string]any, p *bootPlan, t *token, _ int) *apiError {
	bdms, _ := spec["block_device_mapping_v2"].([]any)
	var boot map[string]any
	for _, b := range bdms {
		if m, _ := b.(map[string]any); intOr(m, "boot_index", -1) == 0 {
			boot = m
		}
	}
	if boot == nil {
		ref := str(spec, "imageRef")
		if ref == "" {
			return errf(http.StatusBadRequest, "", "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.")
		}
		img, e := c.bootImage(ref, t)
		if e != nil {
			return e
		}
		if img.MinDisk > p.flavor.Disk && p.flavor.Disk > 0 {
			return errf(http.StatusBadRequest, "", "Flavor's disk is smaller than the minimum size specified in image metadata. Flavor disk is %d bytes, minimum size is %d bytes.", p.flavor.Disk<<30, img.MinDisk<<30)
		}
		if img.MinRAM > p.flavor.RAM {
			return errf(http.StatusBadRequest, "", "Flavor's memory is too small for requested image.")
		}
		p.srv.ImageID = img.ID
		return nil
	}
	p.dot = boolOr(boot, "delete_on_termination", false)
	switch str(boot, "source_type") {
	case "image":
		img, e := c.bootImage(str(boot, "uuid"), t)
		if e != nil {
			return e
		}
		size := intOr(boot, "volume_size", 0)
		if str(boot, "destination_type") != "volume" {
			p.srv.ImageID = img.ID
			return nil
		}
		if size <= 0 {
			return errf(http.StatusBadRequest, "", "Block Device Mapping is Invalid: Images with destination_type 'volume' need to have a non-zero size specified")
		}
		if size < img.MinDisk {
			return errf(http.StatusBadRequest, "", "Volume is smaller than the minimum size specified in image metadata. Volume size is %d bytes, minimum size is %d bytes.", size<<30, img.MinDisk<<30)
		}
		p.volume = &Volume{ID: newUUID(), ProjectID: t.project, UserID: t.user, Status: "creating", Size: size, ImageID: img.ID, Bootable: true, Zone: p.srv.Zone, VolumeType: "__DEFAULT__", Metadata: map[string]string{}}
	case "volume":
		v, ok := c.volumes[str(boot, "uuid")]
		if !ok || !visible(t, v.ProjectID) {
			return errf(http.StatusBadRequest, "", "Block Device Mapping is Invalid: failed to get volume %s.", str(boot, "uuid"))
		}
		if v.Status != "available" {
			return errf(http.StatusBadRequest, "", "Invalid volume: volume %s status must be 'available'", v.ID)
		}
		p.attach = v
	default:
		return errf(http.StatusBadRequest, "", "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.")
	}
	return nil
}

func (c *state) bootImage(ref string, t *token) (*Image, *apiError) {
	img, ok := c.images[ref]
	if !ok || !c.imageVisible(img, t) {
		return nil, errf(http.StatusBadRequest, "", "Image %s could not be found.", ref)
	}
	if img.Status != "active" {
		return nil, errf(http.StatusBadRequest, "", "Image %s is not active.", ref)
	}
	return img, nil
}

func (c *state) checkComputeQuota(project string, f Flavor) *apiError {
	q := c.quota(project)
	instances, cores, ram := c.computeUsage(project)
	for _, chk := range []struct {
		name              string
		limit, used, want int
	}{{"instances", q.Instances, instances, 1}, {"cores", q.Cores, cores, f.VCPUs}, {"ram", q.RAM, ram, f.RAM}} {
		if over(chk.limit, chk.used, chk.want) {
			return errf(http.StatusForbidden, "", "Quota exceeded for %s: Requested %d, but already used %d of %d %s", chk.name, chk.want, chk.used, chk.limit, chk.name)
		}
	}
	return nil
}

// startServer stores a planned server and schedules its build; callers
// hold the lock. As in Nova, the API only checks that a given port is not
// bound (planNetworks): nova-compute binds it (and creates the ports of
// "networks") during the build, halfway through BUILD here (bindPorts),
// so two servers given one port are both accepted and the later one to
// build goes to ERROR.
func (c *state) startServer(p *bootPlan, t *token) *Server {
	srv := p.srv
	srv.meta = c.newMeta()
	vol := p.attach
	if p.volume != nil {
		vol = p.volume
		vol.meta = c.newMeta()
		c.volumes[vol.ID] = vol
	}
	if vol != nil {
		vol.Status, vol.ServerID, vol.Device = "attaching", srv.ID, "/dev/vda"
		srv.Volumes = []AttachedVolume{{ID: vol.ID, DeleteOnTermination: p.dot}}
	}
	c.servers[srv.ID] = srv
	half := c.cfg.BootDelay / 2
	c.after(half, func() {
		if c.bindPorts(srv, p, t) {
			c.after(c.cfg.BootDelay-half, func() { c.bootServer(srv) })
		}
	})
	return srv
}

// building reports whether srv is still being built (not deleted, not
// failed); callers hold the lock.
func (c *state) building(srv *Server) bool {
	_, ok := c.servers[srv.ID]
	return ok && srv.Status == "BUILD" && srv.TaskState != "deleting"
}

// bindPorts is nova-compute's network allocation during the build: the
// given ports are bound to srv, or srv goes to ERROR when one of them was
// bound meanwhile (PortInUse) or deleted; then ports are created on the
// requested networks (as t's user). false: the build ends here. Callers
// hold the lock.
func (c *state) bindPorts(srv *Server, p *bootPlan, t *token) bool {
	if !c.building(srv) {
		return false // deleted while building: Nova aborts the build
	}
	for _, port := range p.ports {
		switch now, ok := c.ports[port.ID]; {
		case !ok:
			c.failBuild(srv, fmt.Sprintf("Port id %s could not be found.", port.ID))
			return false
		case now.DeviceID != "":
			c.failBuild(srv, fmt.Sprintf("Port %s is still in use.", port.ID))
			return false
		}
	}
	ports := p.ports
	for _, req := range p.nets {
		spec := map[string]any{"network_id": req.network.ID}
		if req.fixedIP != "" {
			spec["fixed_ips"] = []any{map[string]any{"ip_address": req.fixedIP}}
		}
		port, e := c.newPort(spec, t)
		if e != nil {
			continue // Nova would put the server in ERROR; the lab boots it without this NIC
		}
		ports = append(ports, port)
		srv.ownPorts = append(srv.ownPorts, port.ID)
	}
	for _, port := range ports {
		port.DeviceID, port.DeviceOwner, port.BindingHost = srv.ID, "compute:"+srv.Zone, "oslab"
		port.touch()
		srv.Ports = append(srv.Ports, port.ID)
	}
	srv.TaskState = "spawning"
	srv.touch()
	return true
}

// failBuild puts a building server in ERROR with Nova's fault message;
// callers hold the lock.
func (c *state) failBuild(srv *Server, fault string) {
	srv.Status, srv.VMState, srv.TaskState = "ERROR", "error", ""
	srv.Fault = fault
	srv.touch()
	c.emit(Event{Kind: ServerError, Server: srv.clone(), UserData: decodeUserData(srv.UserData), Ports: c.portsOf(srv)})
}

// bootServer ends BUILD; callers hold the lock.
func (c *state) bootServer(srv *Server) {
	if !c.building(srv) {
		return // deleted while building (Nova aborts the build), or failed
	}
	for _, av := range srv.Volumes {
		if v, ok := c.volumes[av.ID]; ok {
			v.Status = "in-use"
			v.touch()
		}
	}
	if c.cfg.FailBoot != nil && c.cfg.FailBoot(srv.Name) {
		c.failBuild(srv, fmt.Sprintf("Build of instance %s aborted: the lab was told this server never boots.", srv.ID))
		return
	}
	srv.Status, srv.VMState, srv.TaskState = "ACTIVE", "active", ""
	srv.Launched = time.Now().UTC()
	srv.touch()
	for _, id := range srv.Ports {
		if port, ok := c.ports[id]; ok {
			port.Status = "ACTIVE"
			port.touch()
		}
	}
	c.emit(Event{Kind: ServerActive, Server: srv.clone(), UserData: decodeUserData(srv.UserData), Ports: c.portsOf(srv)})
}

func decodeUserData(ud string) []byte {
	b, _ := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(ud), ""))
	return b
}
