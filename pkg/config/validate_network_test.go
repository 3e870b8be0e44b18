package config_test

import (
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

func TestValidate_Network(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	const pool = "network.external.ingress_pool"
	runProblemCases(t, []problemCase{
		{
			"cidr required", only(edit(t, openstackBase, del("network.cluster.cidr"))), none,
			config.Problems{inCluster("network.cluster.cidr", "network.cluster.cidr is required")},
		},
		{
			"network required", only(edit(t, openstackBase, del("network"))), none,
			config.Problems{inCluster("network", "network is required")},
		},
		{
			"dns and ntp required", only(edit(t, openstackBase, del("network.dns"), set("network.ntp", "~"))), none,
			config.Problems{inCluster("network.dns", "network.dns is required"), inCluster("network.ntp", "network.ntp is required")},
		},
		{
			"cidr host bits", only(edit(t, openstackBase, set("network.cluster.cidr", "192.168.0.1/21"))), none,
			config.Problems{inCluster("network.cluster.cidr", "network.cluster.cidr 192.168.0.1/21 is not a network address (did you mean 192.168.0.0/21?)")},
		},
		{
			"cidr not IPv4", only(edit(t, openstackBase, set("network.cluster.cidr", "fd00::/64"))), none,
			config.Problems{inCluster("network.cluster.cidr", `network.cluster.cidr "fd00::/64" is not an IPv4 network (CIDR such as 192.168.0.0/24)`)},
		},
		{
			"gateway outside cidr", only(edit(t, openstackBase, set("network.cluster.gateway", "10.0.0.1"))), none,
			config.Problems{inCluster("network.cluster.gateway", "network.cluster.gateway 10.0.0.1 is outside network.cluster.cidr 192.168.0.0/21")},
		},
		{
			"gateway not an address", only(edit(t, openstackBase, set("network.cluster.gateway", "gw"))), none,
			config.Problems{inCluster("network.cluster.gateway", `network.cluster.gateway "gw" is not an IP address`)},
		},
		{
			"bad dns entry", only(edit(t, openstackBase, set("network.dns", "[8.8.8.8, dns.example]"))), none,
			config.Problems{inCluster("network.dns[1]", `network.dns[1] "dns.example" is not an IP address`)},
		},
		{
			"mtu too small", only(edit(t, openstackBase, set("network.cluster.mtu", "1000"))), none,
			config.Problems{inCluster("network.cluster.mtu", "network.cluster.mtu must be at least 1280, not 1000")},
		},
		{
			"vlan range", only(edit(t, proxmoxBase, set("network.cluster.vlan", "4095"))), none,
			config.Problems{inCluster("network.cluster.vlan", "network.cluster.vlan must be between 1 and 4094, not 4095")},
		},
		{
			"openstack refuses vip, vlan and external", only(edit(t, openstackBase, set("network.cluster.kubeapi_vip", "192.168.0.2"),
				set("network.cluster.vlan", "10"), set("network.external", "{cidr: 203.0.113.0/24}"))), none,
			config.Problems{
				inCluster("network.external", "network.external is only supported with proxmox; OpenStack reaches the cluster through floating IPs"),
				inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip is not used with openstack (the API VIP is a reserved Neutron port); remove it"),
				inCluster("network.cluster.vlan", "network.cluster.vlan is only supported with proxmox"),
			},
		},
		{
			"proxmox needs a vip", only(edit(t, proxmoxBase, del("network.cluster.kubeapi_vip"))), none,
			config.Problems{inCluster("network", "kubeapi_vip must be set in network.cluster or network.external")},
		},
		{
			"proxmox vip in both networks", only(edit(t, sdnExample, set("network.cluster.kubeapi_vip", "192.168.100.5"))), none,
			config.Problems{inCluster("network.external.kubeapi_vip", "kubeapi_vip must be set in only one of network.cluster or network.external")},
		},
		{
			"vip outside cidr", only(edit(t, proxmoxBase, set("network.cluster.kubeapi_vip", "10.1.1.1"))), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 10.1.1.1 is outside network.cluster.cidr 192.168.0.0/21")},
		},
		{
			"vip is the network address", only(edit(t, proxmoxBase, set("network.cluster.kubeapi_vip", "192.168.0.0"))), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 192.168.0.0 is the network address of 192.168.0.0/21")},
		},
		{
			"vip is the gateway", only(edit(t, proxmoxBase, set("network.cluster.gateway", "192.168.0.2"))), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 192.168.0.2 is also network.cluster.gateway")},
		},
		{
			"external keys required", only(edit(t, sdnExample, del("network.external.cidr"), del("network.external.gateway"), del("network.external.anchor_cidr"))), none,
			config.Problems{
				inCluster("network.external.cidr", "network.external.cidr is required"),
				inCluster("network.external.gateway", "network.external.gateway is required"),
				inCluster("network.external.anchor_cidr", "network.external.anchor_cidr is required"),
			},
		},
		{
			"anchor outside link-local", only(edit(t, sdnExample, set("network.external.anchor_cidr", "10.0.0.0/20"))), none,
			config.Problems{inCluster("network.external.anchor_cidr", "network.external.anchor_cidr 10.0.0.0/20 must be inside 169.254.0.0/16 (link-local)")},
		},
		{
			"anchor host bits", only(edit(t, sdnExample, set("network.external.anchor_cidr", "169.254.32.1/20"))), none,
			config.Problems{inCluster("network.external.anchor_cidr", "network.external.anchor_cidr 169.254.32.1/20 is not a network address (did you mean 169.254.32.0/20?)")},
		},
		{
			"ingress pool outside cidr", only(edit(t, sdnExample, set(pool, "203.0.113.120-203.0.113.130"))), none,
			config.Problems{inCluster(pool, pool+" 203.0.113.120-203.0.113.130 is not inside network.external.cidr 203.0.113.0/25")},
		},
		{
			"ingress pool syntax", only(edit(t, sdnExample, set(pool, "203.0.113.75"))), none,
			config.Problems{inCluster(pool, pool+` "203.0.113.75" must be an IPv4 range start-end, e.g. 203.0.113.75-203.0.113.78`)},
		},
		{
			"ingress pool reversed", only(edit(t, sdnExample, set(pool, "203.0.113.78-203.0.113.75"))), none,
			config.Problems{inCluster(pool, pool+` "203.0.113.78-203.0.113.75" ends before it starts`)},
		},
		{
			"ingress pool holds the gateway", only(edit(t, sdnExample, set(pool, "203.0.113.1-203.0.113.5"))), none,
			config.Problems{inCluster(pool, pool+" 203.0.113.1-203.0.113.5 contains network.external.gateway 203.0.113.1")},
		},
		{
			"vip inside ingress pool", only(edit(t, sdnExample, set("network.external.kubeapi_vip", "203.0.113.76"))), none,
			config.Problems{inCluster("network.external.kubeapi_vip", "network.external.kubeapi_vip 203.0.113.76 is inside network.external.ingress_pool 203.0.113.75-203.0.113.78; MetalLB could hand the API address to a service")},
		},
		{
			"external overlaps cluster", only(edit(t, sdnExample, set("network.external",
				"{cidr: 192.168.100.128/25, gateway: 192.168.100.129, anchor_cidr: 169.254.32.0/20, kubeapi_vip: 192.168.100.200}"))), none,
			config.Problems{inCluster("network.external.cidr", "network.external.cidr 192.168.100.128/25 overlaps network.cluster.cidr 192.168.100.0/24")},
		},
	})
}

func TestValidate_ExternalNetworkDefaults(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, sdnExample, set("network.external.cidr", "203.0.113.5/25"), del("network.external.vlan")))
	ext := c.Network.External
	if ext.CIDR != mustPrefix(t, "203.0.113.0/25") || ext.MTU != config.DefaultMTU || ext.VLAN != 0 {
		t.Errorf("external = %+v, want cidr masked, mtu 1500, untagged", ext)
	}
}
