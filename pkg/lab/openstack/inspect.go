package openstack

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Inventory is a copy of everything the lab's OpenStack holds, each kind
// in creation order.
type Inventory struct {
	Projects           []Project
	Flavors            []Flavor
	Servers            []Server
	Networks           []Network
	Subnets            []Subnet
	Ports              []Port
	Routers            []Router
	FloatingIPs        []FloatingIP
	SecurityGroups     []SecurityGroup
	SecurityGroupRules []SecurityGroupRule
	Images             []Image
	Volumes            []Volume
}

// copies returns deep-enough copies of a map's values in creation order.
func copies[T any](m map[string]*T, seq func(*T) int64, clone func(T) T) []T {
	out := make([]T, 0, len(m))
	for _, v := range sortedValues(m, seq) {
		out = append(out, clone(*v))
	}
	return out
}

// Inventory returns a copy of every resource.
func (s *Cloud) Inventory() Inventory {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	inv := Inventory{Flavors: slices.Clone(c.flavors)}
	for _, p := range c.sortedProjects() {
		inv.Projects = append(inv.Projects, *p)
	}
	inv.Servers = copies(c.servers, func(x *Server) int64 { return x.seq }, func(x Server) Server { return *x.clone() })
	inv.Networks = copies(c.networks, func(x *Network) int64 { return x.seq }, func(x Network) Network { x.Tags = slices.Clone(x.Tags); return x })
	inv.Subnets = copies(c.subnets, func(x *Subnet) int64 { return x.seq }, func(x Subnet) Subnet {
		x.Tags, x.DNSNameservers, x.Pools = slices.Clone(x.Tags), slices.Clone(x.DNSNameservers), slices.Clone(x.Pools)
		return x
	})
	inv.Ports = copies(c.ports, func(x *Port) int64 { return x.seq }, func(x Port) Port { return *x.clone() })
	inv.Routers = copies(c.routers, func(x *Router) int64 { return x.seq }, func(x Router) Router {
		x.Tags = slices.Clone(x.Tags)
		if x.Gateway != nil {
			gw := *x.Gateway
			x.Gateway = &gw
		}
		return x
	})
	inv.FloatingIPs = copies(c.fips, func(x *FloatingIP) int64 { return x.seq }, func(x FloatingIP) FloatingIP { return *x.clone() })
	inv.SecurityGroups = copies(c.sgs, func(x *SecurityGroup) int64 { return x.seq }, func(x SecurityGroup) SecurityGroup { x.Tags = slices.Clone(x.Tags); return x })
	inv.SecurityGroupRules = copies(c.rules, func(x *SecurityGroupRule) int64 { return x.seq }, func(x SecurityGroupRule) SecurityGroupRule { return x })
	inv.Images = copies(c.images, func(x *Image) int64 { return x.seq }, func(x Image) Image {
		x.Tags, x.Properties = slices.Clone(x.Tags), maps.Clone(x.Properties)
		return x
	})
	inv.Volumes = copies(c.volumes, func(x *Volume) int64 { return x.seq }, func(x Volume) Volume { x.Metadata = maps.Clone(x.Metadata); return x })
	return inv
}

// Owned counts, per kind ("servers", "ports", "networks", "subnets",
// "routers", "floatingips", "security_groups", "images", and "volumes"
// attached to counted servers), the resources carrying every tag in tags
// (for example "managed-by=taloscluster", "cluster=demo").
func (s *Cloud) Owned(tags ...string) map[string]int {
	inv := s.Inventory()
	has := func(have []string) bool {
		for _, t := range tags {
			if !slices.Contains(have, t) {
				return false
			}
		}
		return true
	}
	out := map[string]int{}
	add := func(kind string, have []string) {
		if has(have) {
			out[kind]++
		}
	}
	owned := map[string]bool{}
	for _, x := range inv.Servers {
		add("servers", x.Tags)
		owned[x.ID] = has(x.Tags)
	}
	for _, x := range inv.Volumes {
		if owned[x.ServerID] {
			out["volumes"]++
		}
	}
	for _, x := range inv.Networks {
		add("networks", x.Tags)
	}
	for _, x := range inv.Subnets {
		add("subnets", x.Tags)
	}
	for _, x := range inv.Ports {
		add("ports", x.Tags)
	}
	for _, x := range inv.Routers {
		add("routers", x.Tags)
	}
	for _, x := range inv.FloatingIPs {
		add("floatingips", x.Tags)
	}
	for _, x := range inv.SecurityGroups {
		add("security_groups", x.Tags)
	}
	for _, x := range inv.Images {
		add("images", x.Tags)
	}
	return out
}

// Project returns the project named name.
func (s *Cloud) Project(name string) (Project, bool) {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.projectByName(name); p != nil {
		return *p, true
	}
	return Project{}, false
}

// ExternalNetwork returns the id of the external network "public".
func (s *Cloud) ExternalNetwork() string { return s.st.externalNet }

// CloudsYAML renders a clouds.yaml for this lab, with the real lab's cloud
// names: "oslab" for the admin user, "oslab-<user>" for the others, and
// "oslab-appcred-<name>" (auth type v3applicationcredential) per creds.
func (s *Cloud) CloudsYAML(creds ...AppCredential) []byte {
	var b strings.Builder
	b.WriteString("clouds:\n")
	tail := fmt.Sprintf("    region_name: %s\n    identity_api_version: 3\n    interface: public\n", s.cfg.Region)
	for _, u := range s.cfg.Users {
		name := "oslab-" + u.Name
		if u.Name == "admin" {
			name = "oslab"
		}
		fmt.Fprintf(&b, "  %s:\n    auth:\n      auth_url: %s\n      username: %s\n      password: %s\n      project_name: %s\n"+
			"      user_domain_name: Default\n      project_domain_name: Default\n%s", name, s.AuthURL(), u.Name, u.Password, u.Project, tail)
	}
	for _, ac := range creds {
		fmt.Fprintf(&b, "  oslab-appcred-%s:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: %s\n"+
			"      application_credential_id: %s\n      application_credential_secret: %s\n%s", ac.Name, s.AuthURL(), ac.ID, ac.Secret, tail)
	}
	return []byte(b.String())
}
