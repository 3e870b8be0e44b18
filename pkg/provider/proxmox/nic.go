package proxmox

import (
	"strconv"
	"strings"

	"github.com/talosc/talosc/pkg/config"
)

// nicKeys are the VM NICs talosc creates: the cluster NIC and the
// external one.
var nicKeys = []string{"net0", "net1"}

// nic is a virtio NIC with the Proxmox firewall on. It carries no mtu= so
// it inherits the bridge MTU (reference §5.3).
func nic(mac, bridge string, vlan int) string {
	s := "virtio=" + mac + ",bridge=" + bridge + ",firewall=1"
	if vlan > 0 {
		s += ",tag=" + strconv.Itoa(vlan)
	}
	return s
}

// externalNIC is the bridge and VLAN of the external NIC (net1); ok is
// false when the VMs get none.
func externalNIC(cluster *config.Cluster) (bridge string, vlan int, ok bool) {
	ext, extNet := cluster.Proxmox.Network.External, cluster.Network.External
	if ext == nil || extNet == nil {
		return "", 0, false
	}
	return ext.Bridge, extNet.VLAN, true
}

// nicChange is a NIC setting of an existing VM that differs from what
// cluster.yaml now says; Proxmox NICs are set when a VM is created.
type nicChange struct {
	key, have, want, why string
}

// nicChanges compares a VM config's NICs with the ones vmConfig would
// create: the cluster NIC's bridge and VLAN, the external NIC's presence,
// bridge and VLAN.
func nicChanges(cluster *config.Cluster, conf map[string]string) []nicChange {
	var out []nicChange
	add := func(key, have, want, why string) {
		if have != want {
			out = append(out, nicChange{key: key, have: have, want: want, why: why + " is set when a VM is created"})
		}
	}
	if net0, ok := conf["net0"]; ok {
		if bridge := option(net0, "bridge"); bridge != "" {
			add("proxmox.network.cluster", bridge, clusterBridge(cluster), "the cluster NIC's bridge")
		}
		add("network.cluster.vlan", vlanOf(net0), vlanName(cluster.Network.Cluster.VLAN), "the cluster NIC's VLAN tag")
	}
	net1, has := conf["net1"]
	bridge, vlan, want := externalNIC(cluster)
	switch {
	case want && !has:
		add("network.external", "none", "bridge "+bridge, "the external NIC (net1)")
	case has && !want:
		add("network.external", "bridge "+option(net1, "bridge"), "none", "the external NIC (net1)")
	case has:
		add("proxmox.network.external.bridge", option(net1, "bridge"), bridge, "the external NIC's bridge")
		add("network.external.vlan", vlanOf(net1), vlanName(vlan), "the external NIC's VLAN tag")
	}
	return out
}

// vlanOf is the VLAN tag of a NIC, "untagged" without one.
func vlanOf(nic string) string {
	n, _ := strconv.Atoi(option(nic, "tag"))
	return vlanName(n)
}

// vlanName renders a configured VLAN as vlanOf does.
func vlanName(vlan int) string {
	if vlan <= 0 {
		return "untagged"
	}
	return strconv.Itoa(vlan)
}

// nicsWithMTU are the NICs of a VM config that still carry mtu= (made by
// an older tool), each with its value rewritten without it: every other
// option, the MAC included, kept.
func nicsWithMTU(conf map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range nicKeys {
		if v, ok := withoutOption(conf[k], "mtu"); ok {
			out[k] = v
		}
	}
	return out
}

// withoutOption is a Proxmox property string without its key= option; ok
// is false when it has none.
func withoutOption(prop, key string) (string, bool) {
	parts := strings.Split(prop, ",")
	kept := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, key+"=") {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(parts) {
		return prop, false
	}
	return strings.Join(kept, ","), true
}

// unfirewalledNICs are the NICs of a VM config without firewall=1, on
// which the per-VM firewall (the security allowlists) is not enforced.
func unfirewalledNICs(conf map[string]string) []string {
	var out []string
	for _, k := range nicKeys {
		if v, ok := conf[k]; ok && option(v, "firewall") != "1" {
			out = append(out, k)
		}
	}
	return out
}
