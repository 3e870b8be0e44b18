package openstack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

func (s *Cloud) serverLinks(id string) []any {
	return []any{
		map[string]any{"rel": "self", "href": s.URL + ComputePrefix + "/v2.1/servers/" + id},
		map[string]any{"rel": "bookmark", "href": s.URL + ComputePrefix + "/servers/" + id},
	}
}

func (c *state) flavorByID(id string) Flavor {
	for _, f := range c.flavors {
		if f.ID == id {
			return f
		}
	}
	return Flavor{ID: id}
}

func (c *state) serverSGNames(srv *Server) []string {
	var names []string
	for _, id := range srv.Ports {
		if p, ok := c.ports[id]; ok {
			for _, g := range p.SecurityGroups {
				if sg, ok := c.sgs[g]; ok {
					names = append(names, sg.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// addresses is Nova's view of a server's network info cache.
func (c *state) addresses(srv *Server) map[string]any {
	out := map[string]any{}
	for _, id := range srv.Ports {
		p, ok := c.ports[id]
		if !ok {
			continue
		}
		name := p.NetworkID
		if n, ok := c.networks[p.NetworkID]; ok {
			name = n.Name
		}
		list, _ := out[name].([]any)
		for _, f := range p.FixedIPs {
			list = append(list, map[string]any{"version": 4, "addr": f.IPAddress, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress})
		}
		for _, f := range c.fipsOf(p.ID) {
			list = append(list, map[string]any{"version": 4, "addr": f.FloatingIPAddress, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": p.MACAddress})
		}
		out[name] = list
	}
	return out
}

func (s *Cloud) flavorRef(f Flavor, mv int) map[string]any {
	if mv >= 47 {
		return map[string]any{"vcpus": f.VCPUs, "ram": f.RAM, "disk": f.Disk, "ephemeral": 0, "swap": 0, "original_name": f.Name, "extra_specs": map[string]any{}}
	}
	return map[string]any{"id": f.ID, "links": []any{map[string]any{"rel": "bookmark", "href": s.URL + ComputePrefix + "/flavors/" + f.ID}}}
}

// serverView is GET /servers/{id} at microversion mv; callers hold the lock.
func (s *Cloud) serverView(srv *Server, t *token, mv int) map[string]any {
	c := s.st
	var image any = ""
	if srv.ImageID != "" {
		image = map[string]any{"id": srv.ImageID, "links": []any{map[string]any{"rel": "bookmark", "href": s.URL + ComputePrefix + "/images/" + srv.ImageID}}}
	}
	var task, launched any
	if srv.TaskState != "" {
		task = srv.TaskState
	}
	if !srv.Launched.IsZero() {
		launched = fmtTime(srv.Launched, timeCinder)
	}
	power, hostID := 0, ""
	if srv.Status == "ACTIVE" {
		h := sha256.Sum224([]byte(srv.ProjectID + "oslab"))
		power, hostID = 1, hex.EncodeToString(h[:])
	}
	vols := []any{}
	for _, v := range srv.Volumes {
		vols = append(vols, map[string]any{"id": v.ID, "delete_on_termination": v.DeleteOnTermination})
	}
	configDrive := ""
	if srv.ConfigDrive {
		configDrive = "True"
	}
	v := map[string]any{
		"id": srv.ID, "name": srv.Name, "status": srv.Status, "tenant_id": srv.ProjectID, "user_id": srv.UserID,
		"metadata": srv.Metadata, "hostId": hostID, "image": image, "flavor": s.flavorRef(c.flavorByID(srv.FlavorID), mv),
		"created": fmtTime(srv.Created, timeNova), "updated": fmtTime(srv.Updated, timeNova), "addresses": c.addresses(srv),
		"accessIPv4": "", "accessIPv6": "", "links": s.serverLinks(srv.ID), "OS-DCF:diskConfig": "MANUAL",
		"OS-EXT-AZ:availability_zone": srv.Zone, "config_drive": configDrive, "key_name": nil,
		"OS-SRV-USG:launched_at": launched, "OS-SRV-USG:terminated_at": nil, "OS-EXT-STS:task_state": task,
		"OS-EXT-STS:vm_state": srv.VMState, "OS-EXT-STS:power_state": power, "os-extended-volumes:volumes_attached": vols,
	}
	if names := c.serverSGNames(srv); len(names) > 0 {
		sgs := []any{}
		for _, n := range names {
			sgs = append(sgs, map[string]any{"name": n})
		}
		v["security_groups"] = sgs
	}
	if srv.Status == "BUILD" || srv.Status == "ACTIVE" {
		v["progress"] = 0
	}
	if srv.Status == "ERROR" {
		v["fault"] = map[string]any{"code": 500, "created": fmtTime(srv.Updated, timeNova), "message": srv.Fault}
	}
	s.microversionFields(v, srv, t, mv)
	return v
}

// microversionFields adds the fields later microversions and admins see.
func (s *Cloud) microversionFields(v map[string]any, srv *Server, t *token, mv int) {
	for _, f := range []struct {
		min int
		key string
		val any
		adm bool
	}{
		{9, "locked", false, false},
		{73, "locked_reason", nil, false},
		{19, "description", nil, false},
		{26, "tags", sortedTags(srv.Tags), false},
		{63, "trusted_image_certificates", nil, false},
		{16, "host_status", "UP", true},
		{1, "OS-EXT-SRV-ATTR:host", "oslab", true},
		{1, "OS-EXT-SRV-ATTR:hypervisor_hostname", "oslab", true},
		{1, "OS-EXT-SRV-ATTR:instance_name", fmt.Sprintf("instance-%08x", srv.seq), true},
		{3, "OS-EXT-SRV-ATTR:reservation_id", "r-" + srv.ID[:8], true},
		{3, "OS-EXT-SRV-ATTR:launch_index", 0, true},
		{3, "OS-EXT-SRV-ATTR:hostname", hostname(srv.Name), mv < 90},
		{3, "OS-EXT-SRV-ATTR:kernel_id", "", true},
		{3, "OS-EXT-SRV-ATTR:ramdisk_id", "", true},
		{3, "OS-EXT-SRV-ATTR:root_device_name", "/dev/vda", true},
		{3, "OS-EXT-SRV-ATTR:user_data", nilIfEmpty(srv.UserData), true},
	} {
		if mv >= f.min && (!f.adm || t.admin()) {
			v[f.key] = f.val
		}
	}
}

// hostname is Nova's sanitised hostname of a server name.
func hostname(name string) string {
	h := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == ' ', r == '_':
			return '-'
		}
		return -1
	}, name)
	return strings.Trim(h, "-.")
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Cloud) volumeAttachments(cl *call) (any, error) {
	r, t, mv := cl.r, cl.t, cl.mv
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	srv, e := c.server(r.PathValue("id"), t)
	if e != nil {
		return nil, e
	}
	out := []any{}
	for _, av := range srv.Volumes {
		a := map[string]any{"id": av.ID, "volumeId": av.ID, "serverId": srv.ID, "device": "/dev/vda"}
		if mv >= 70 {
			a["tag"] = nil
		}
		if mv >= 79 {
			a["delete_on_termination"] = av.DeleteOnTermination
		}
		out = append(out, a)
	}
	return map[string]any{"volumeAttachments": out}, nil
}
