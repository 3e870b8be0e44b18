package proxmox

import (
	"fmt"
	"slices"
	"strings"
)

// SDNKind is a kind of SDN object.
type SDNKind string

// The SDN object kinds (the files under /etc/pve/sdn).
const (
	SDNControllers SDNKind = "controllers"
	SDNZones       SDNKind = "zones"
	SDNVNets       SDNKind = "vnets"
	SDNSubnets     SDNKind = "subnets"
)

var sdnKinds = []SDNKind{SDNControllers, SDNZones, SDNVNets, SDNSubnets}

// idKey is the field an object's id is returned in.
func (k SDNKind) idKey() string {
	return map[SDNKind]string{SDNControllers: "controller", SDNZones: "zone", SDNVNets: "vnet", SDNSubnets: "subnet"}[k]
}

// what names the kind in PVE's messages ("sdn zone").
func (k SDNKind) what() string {
	return map[SDNKind]string{SDNControllers: "sdn controller", SDNZones: "sdn zone", SDNVNets: "sdn vnet", SDNSubnets: "sdn subnet"}[k]
}

type sdnConfig map[SDNKind]map[string]map[string]string

func newSDNConfig() sdnConfig {
	c := sdnConfig{}
	for _, k := range sdnKinds {
		c[k] = map[string]map[string]string{}
	}
	return c
}

func (c sdnConfig) clone() sdnConfig {
	out := newSDNConfig()
	for k, objs := range c {
		for id, o := range objs {
			out[k][id] = cloneMap(o)
		}
	}
	return out
}

// sdnState is PVE's SDN model: the staged config (sdn/*.cfg, what the API
// edits), the running config (.running-config, what "apply" committed) and
// what each node's network actually runs after the last reload.
type sdnState struct {
	staged  sdnConfig
	running sdnConfig
	live    map[string]sdnConfig
	version int
}

func newSDNState() sdnState {
	return sdnState{staged: newSDNConfig(), running: newSDNConfig(), live: map[string]sdnConfig{}}
}

// sdnNumeric are the SDN fields PVE emits as numbers.
var sdnNumeric = []string{
	"mtu", "vrf-vxlan", "tag", "vlanaware", "isolate-ports", "advertise-subnets", "disable-arp-nd-suppression",
	"exitnodes-local-routing", "vxlan-port", "dp-id", "asn", "ebgp", "ebgp-multihop", "bgp-multipath-as-path-relax", "snat",
	"bridge-disable-mac-learning",
}

func sdnIsNumeric(k string) bool { return slices.Contains(sdnNumeric, k) }

// subnetFields adds what sdn_subnets_config derives from a subnet id.
func subnetFields(id string, o map[string]any) {
	parts := strings.SplitN(id, "-", 3)
	if len(parts) != 3 {
		return
	}
	o["id"], o["zone"], o["network"], o["mask"], o["cidr"] = id, parts[0], parts[1], parts[2], parts[1]+"/"+parts[2]
}

// pendingView merges running and staged like PVE::Network::SDN::
// pending_config: running values at the top level, staged differences in
// "pending", and state new / changed / deleted.
func pendingView(running, staged map[string]map[string]string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range running {
		o := map[string]any{}
		st, inStaged := staged[id]
		pending := map[string]any{}
		state := ""
		for k, v := range r {
			o[k] = typedValue(k, v, sdnIsNumeric)
			switch sv, ok := st[k]; {
			case !inStaged:
				state = "deleted"
			case !ok:
				pending[k] = "deleted"
				state = "changed"
			case sv != v:
				state = "changed"
			}
		}
		if state != "" {
			o["state"], o["pending"] = state, pending
		}
		out[id] = o
	}
	for id, st := range staged {
		o := out[id]
		if o == nil {
			o = map[string]any{}
			out[id] = o
		}
		r, inRunning := running[id]
		var pending map[string]any
		if p, ok := o["pending"].(map[string]any); ok {
			pending = p
		} else {
			pending = map[string]any{}
		}
		for k, v := range st {
			if k == "type" || k == "vnet" {
				o[k] = typedValue(k, v, sdnIsNumeric)
			} else if rv, ok := r[k]; !ok || rv != v {
				pending[k] = typedValue(k, v, sdnIsNumeric)
			}
			if !inRunning {
				o["state"] = "new"
			} else if _, ok := r[k]; !ok {
				o["state"] = "changed"
			}
		}
		if len(pending) > 0 || o["state"] != nil {
			o["pending"] = pending
		}
	}
	return out
}

// StageSDN writes an SDN object into the staged config without applying
// it, as another administrator editing SDN in the GUI would: talosc must
// notice such foreign pending changes and never commit them. props are
// the object's fields ("type" included).
func (s *Server) StageSDN(kind SDNKind, id string, props map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.sdn.staged[kind]
	if !ok {
		return fmt.Errorf("unknown SDN kind %q", kind)
	}
	objs[id] = cloneMap(props)
	return nil
}

// UnstageSDN deletes an object from the staged config (a pending deletion
// when it is running).
func (s *Server) UnstageSDN(kind SDNKind, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.sdn.staged[kind]
	if !ok {
		return fmt.Errorf("unknown SDN kind %q", kind)
	}
	delete(objs, id)
	return nil
}

// ApplySDN commits the staged SDN config and reloads every online node at
// once, as a finished "apply" would.
func (s *Server) ApplySDN() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitSDN()
	s.reloadSDN()
}

// commitSDN is PVE::Network::SDN::commit_config. The caller holds s.mu.
func (s *Server) commitSDN() {
	s.sdn.running = s.sdn.staged.clone()
	s.sdn.version++
}

// reloadSDN makes every online node run the committed config. The caller
// holds s.mu.
func (s *Server) reloadSDN() {
	for _, n := range s.nodeOrder {
		if !s.nodes[n].Offline {
			s.sdn.live[n] = s.sdn.running.clone()
		}
	}
}

// zoneOnNode reports whether a zone of cfg spans node.
func zoneOnNode(cfg sdnConfig, zone, node string) bool {
	z := cfg[SDNZones][zone]
	if z == nil {
		return false
	}
	return z["nodes"] == "" || slices.Contains(strings.Split(z["nodes"], ","), node)
}

// vnetOnNode reports whether node runs a bridge for the VNet. The caller
// holds s.mu.
func (s *Server) vnetOnNode(vnet, node string) bool {
	live := s.sdn.live[node]
	if live == nil {
		return false
	}
	v := live[SDNVNets][vnet]
	return v != nil && zoneOnNode(live, v["zone"], node)
}

// localVNets are the VNet bridges a node runs, as /nodes/{node}/network
// ?type=any_bridge adds them. The caller holds s.mu.
func (s *Server) localVNets(node string) []map[string]any {
	live := s.sdn.live[node]
	var out []map[string]any
	if live == nil {
		return out
	}
	for _, id := range sortedKeys(live[SDNVNets]) {
		v := live[SDNVNets][id]
		if !zoneOnNode(live, v["zone"], node) {
			continue
		}
		iface := map[string]any{
			"iface": id, "type": "vnet", "active": "1", "vlanaware": b2i(v["vlanaware"] == "1"),
			"ipam": b2i(live[SDNZones][v["zone"]]["ipam"] != ""), "comments": v["alias"],
		}
		if mtu := live[SDNZones][v["zone"]]["mtu"]; mtu != "" {
			iface["mtu"] = mtu
		}
		out = append(out, iface)
	}
	return out
}

// sdnResources are the SDN zones of /cluster/resources. The caller holds
// s.mu.
func (s *Server) sdnResources() []map[string]any {
	var out []map[string]any
	for _, n := range s.nodeOrder {
		live := s.sdn.live[n]
		if live == nil || s.nodes[n].Offline {
			continue
		}
		for _, z := range sortedKeys(live[SDNZones]) {
			if zoneOnNode(live, z, n) {
				out = append(out, map[string]any{"id": "sdn/" + n + "/" + z, "sdn": z, "node": n, "type": "sdn", "status": "ok"})
			}
		}
	}
	return out
}
