package config_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/talosc/talosc/pkg/config"
)

func TestValidate_OpenStack(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	runProblemCases(t, []problemCase{
		{
			"url", only(edit(t, openstackBase, set("openstack.url", "keystone.example:5000"))), none,
			config.Problems{inCluster("openstack.url", `openstack.url "keystone.example:5000" is not an http(s) URL such as https://host:port/`)},
		},
		{
			"required keys", only(edit(t, openstackBase, del("openstack.availability_zone"), set("openstack.external_net", `""`))), none,
			config.Problems{
				inCluster("openstack.availability_zone", "openstack.availability_zone is required"),
				inCluster("openstack.external_net", "openstack.external_net must not be empty"),
			},
		},
	})
	if got := mustLoad(t, openstackBase).OpenStack.Region; got != config.DefaultRegion {
		t.Errorf("region = %q, want the default %q", got, config.DefaultRegion)
	}
}

func TestValidate_Proxmox(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	const tls = "proxmox.tls_verify"
	runProblemCases(t, []problemCase{
		{
			"url path", only(edit(t, proxmoxBase, set("proxmox.url", "https://pve:8006/ui"))), none,
			config.Problems{inCluster("proxmox.url", `proxmox.url "https://pve:8006/ui" must be the API origin, e.g. https://pve.example.edu:8006`)},
		},
		{
			"storages required", only(edit(t, proxmoxBase, del("proxmox.storage"), del("proxmox.iso_storage"))), none,
			config.Problems{
				inCluster("proxmox.storage", "proxmox.storage is required"),
				inCluster("proxmox.iso_storage", "proxmox.iso_storage is required"),
			},
		},
		{
			"placement", only(edit(t, proxmoxBase, set("proxmox.placement_strategy", "pack"))), none,
			config.Problems{inCluster("proxmox.placement_strategy", `proxmox.placement_strategy "pack" is not supported; the only strategy is spread`)},
		},
		{
			"duplicate node", only(edit(t, proxmoxBase, set("proxmox.nodes", "[pve1, pve1]"))), none,
			config.Problems{inCluster("proxmox.nodes[1]", "proxmox.nodes[1] lists pve1 twice")},
		},
		{
			"tls_verify empty", only(edit(t, proxmoxBase, set(tls, `""`))), none,
			config.Problems{inCluster(tls, tls+" must be true, false or a CA-bundle path, not an empty string")},
		},
		{
			"tls_verify quoted false", only(edit(t, proxmoxBase, set(tls, `"false"`))), none,
			config.Problems{inCluster(tls, tls+` is the string "false"; write true or false without quotes (or give a CA-bundle path)`)},
		},
		{
			"tls_verify number", only(edit(t, proxmoxBase, set(tls, `1`))), none,
			config.Problems{inCluster(tls, tls+" must be true, false or a CA-bundle path, not the number 1")},
		},
		{
			"network required", only(edit(t, proxmoxBase, del("proxmox.network"))), none,
			config.Problems{inCluster("proxmox.network", "proxmox.network is required")},
		},
		{
			"bridge and vnet", only(edit(t, proxmoxBase, set("proxmox.network.cluster.vnet", "vn1"))), none,
			config.Problems{inCluster("proxmox.network.cluster", "proxmox.network.cluster must set exactly one of bridge, vnet, or sdn")},
		},
		{
			"none of bridge, vnet, sdn", only(edit(t, proxmoxBase, set("proxmox.network.cluster", "{}"))), none,
			config.Problems{inCluster("proxmox.network.cluster", "proxmox.network.cluster must set exactly one of bridge, vnet, or sdn")},
		},
		{
			"external bridge without network.external", only(edit(t, proxmoxBase, set("proxmox.network.external", "{bridge: vmbr1}"))), none,
			config.Problems{inCluster("proxmox.network.external", "proxmox.network.external requires network.external (cidr, gateway, anchor_cidr)")},
		},
		{
			"network.external without a bridge", only(edit(t, sdnExample, del("proxmox.network.external"))), none,
			config.Problems{inCluster("proxmox.network.external.bridge", "proxmox.network.external.bridge is required when network.external is set")},
		},
	})
}

func TestValidate_ProxmoxValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, url, tls string
		want           config.TLSVerify
		wantURL        string
	}{
		{"defaults", "https://pve:8006", "", config.TLSVerify{}, "https://pve:8006"},
		{"api path and false", "https://pve:8006/api2/json/", "false", config.TLSVerify{Insecure: true}, "https://pve:8006"},
		{"yaml 1.1 off", "https://pve:8006/", "off", config.TLSVerify{Insecure: true}, "https://pve:8006"},
		{"ca bundle", "https://pve:8006", "pve-ca.pem", config.TLSVerify{CABundle: "pve-ca.pem"}, "https://pve:8006"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := edit(t, proxmoxBase, set("proxmox.url", tc.url))
			if tc.tls != "" {
				doc = edit(t, doc, set("proxmox.tls_verify", tc.tls))
			}
			px := mustLoad(t, doc).Proxmox
			if px.TLSVerify != tc.want || px.URL != tc.wantURL || px.CIDataStorage != "local" || px.PlacementStrategy != "spread" {
				t.Errorf("proxmox = %+v", px)
			}
		})
	}
}

func TestLoad_SDNExample(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, sdnExample)
	want := &config.SDN{
		Name: "mycl", Zone: "evpn", Controller: "evpnctl", ASN: 65000,
		VRFTag: 8868700, Tag: 8868701, ExitNodes: []string{"pve001", "pve003"}, PrimaryExitNode: "pve001", MTU: 8950,
	}
	if d := cmp.Diff(want, c.Proxmox.Network.Cluster.SDN); d != "" {
		t.Errorf("sdn (-want +got):\n%s", d)
	}
	wantNet := config.Network{
		Cluster: config.ClusterNetwork{CIDR: mustPrefix(t, "192.168.100.0/24"), MTU: 1500},
		External: &config.ExternalNetwork{
			CIDR: mustPrefix(t, "203.0.113.0/25"), Gateway: mustAddr(t, "203.0.113.1"), VLAN: 100, MTU: 1500,
			KubeAPIVIP: mustAddr(t, "203.0.113.79"), AnchorCIDR: mustPrefix(t, "169.254.32.0/20"),
			IngressPool: config.AddrRange{Start: mustAddr(t, "203.0.113.75"), End: mustAddr(t, "203.0.113.78")},
		},
		DNS: []netip.Addr{mustAddr(t, "192.0.2.53")},
		NTP: []string{"ntp.example.edu"},
	}
	if d := cmp.Diff(wantNet, c.Network, netipOpts()); d != "" {
		t.Errorf("network (-want +got):\n%s", d)
	}
	if c.Proxmox.Network.External.Bridge != "vmbr1" || len(c.Warnings) != 0 {
		t.Errorf("external bridge %q, warnings %v", c.Proxmox.Network.External.Bridge, c.Warnings)
	}
	gw, _ := c.SDNGateway()
	cp1, _ := c.SDNAddress(config.Machine{Role: config.RoleControlPlane, Pool: "controlplane", Index: 1})
	w1, _ := c.SDNAddress(config.Machine{Role: config.RoleWorker, Pool: "worker", Index: 1})
	gpu1, _ := c.SDNAddress(config.Machine{Role: config.RoleWorker, Pool: "gpu", Index: 1})
	got := []string{gw.String(), cp1.String(), w1.String(), gpu1.String()}
	if d := cmp.Diff([]string{"192.168.100.1", "192.168.100.11", "192.168.100.61", "192.168.100.111"}, got); d != "" {
		t.Errorf("SDN layout (-want +got):\n%s", d)
	}
}

func TestValidate_SDN(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	const s = "proxmox.network.cluster.sdn"
	vip := func(a string) string {
		return edit(t, sdnExample, del("network.external.kubeapi_vip"), set("network.cluster.kubeapi_vip", a))
	}
	runProblemCases(t, []problemCase{
		{
			"zone", only(edit(t, sdnExample, set(s+".zone", "simple"))), none,
			config.Problems{inCluster(s+".zone", s+`.zone is "simple"; talosc only supports 'evpn'`)},
		},
		{
			"bad name", only(edit(t, sdnExample, set(s+".name", "my-cl"))), none,
			config.Problems{inCluster(s+".name", s+`.name "my-cl" is not a valid SDN id (2-8 letters or digits, starting with a letter, no hyphens)`)},
		},
		{
			"cluster name unusable as SDN id", only(edit(t, sdnExample, del(s+".name"))), none,
			config.Problems{inCluster(s+".name", s+`.name is unset and the cluster name "mycluster" is not a valid SDN id (2-8 letters or digits, starting with a letter, no hyphens); set `+s+".name")},
		},
		{
			"default tag out of range", only(edit(t, sdnExample, set(s+".vrf_tag", "16777215"))), none,
			config.Problems{inCluster(s+".tag", s+".tag defaults to vrf_tag+1 = 16777216, which is above 16777215; set an explicit tag")},
		},
		{
			"tag equals vrf_tag", only(edit(t, sdnExample, set(s+".vrf_tag", "5000"), set(s+".tag", "5000"))), none,
			config.Problems{inCluster(s+".tag", s+".tag must differ from vrf_tag (5000)")},
		},
		{
			"vrf_tag range", only(edit(t, sdnExample, set(s+".vrf_tag", "0"))), none,
			config.Problems{inCluster(s+".vrf_tag", s+".vrf_tag must be between 1 and 16777215, not 0")},
		},
		{
			"asn range", only(edit(t, sdnExample, set(s+".asn", "4294967296"))), none,
			config.Problems{inCluster(s+".asn", s+".asn must be between 0 and 4294967295, not 4294967296")},
		},
		{
			"exit nodes outside the zone", only(edit(t, sdnExample, set(s+".nodes", "[pve001, pve002, pve003]"), set(s+".exit_nodes", "[pve001, pve009]"))), none,
			config.Problems{inCluster(s+".exit_nodes", s+".exit_nodes must be members of "+s+".nodes (pve009 is not)")},
		},
		{
			"zone nodes miss a proxmox node", only(edit(t, sdnExample, set(s+".nodes", "[pve001, pve003]"))), none,
			config.Problems{inCluster(s+".nodes", s+".nodes must include every proxmox.nodes entry (missing pve002)")},
		},
		{
			"primary not an exit node", only(edit(t, sdnExample, set(s+".primary_exit_node", "pve002"))), none,
			config.Problems{inCluster(s+".primary_exit_node", s+`.primary_exit_node "pve002" must be one of the exit nodes (pve001 and pve003)`)},
		},
		{
			"mtu below the cluster mtu", only(edit(t, sdnExample, set(s+".mtu", "1400"))), none,
			config.Problems{inCluster(s+".mtu", s+".mtu 1400 must be greater than 0 and at least network.cluster.mtu (1500)")},
		},
		{
			"vlan with sdn", only(edit(t, sdnExample, set("network.cluster.vlan", "10"))), none,
			config.Problems{inCluster("network.cluster.vlan", "network.cluster.vlan cannot be used with proxmox.network.cluster.sdn (the EVPN VNet carries the traffic untagged)")},
		},
		{
			"sdn needs dns", only(edit(t, sdnExample, set("network.dns", "[]"))), none,
			config.Problems{inCluster("network.dns", "network.dns must list at least one resolver with managed SDN (proxmox.network.cluster.sdn has no DHCP)")},
		},
		{
			"at most 49 per pool", only(edit(t, sdnExample, set("workers.worker.count", "50"))), none,
			config.Problems{inCluster("workers.worker.count", "workers.worker.count is 50; managed SDN allows at most 49 machines per pool")},
		},
		{
			"addresses must fit the cidr", only(edit(t, sdnExample, set("network.cluster.cidr", "192.168.100.0/26"))), none,
			config.Problems{
				inCluster("workers.worker.count", "workers.worker.count is 3, but the SDN static address of mycluster-worker-03 does not fit network.cluster.cidr 192.168.100.0/26"),
				inCluster("workers.gpu.count", "workers.gpu.count is 1, but the SDN static address of mycluster-gpu-01 does not fit network.cluster.cidr 192.168.100.0/26"),
			},
		},
		{
			"vip on the anycast gateway", only(vip("192.168.100.1")), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 192.168.100.1 collides with the SDN anycast gateway")},
		},
		{
			"vip on a node address", only(vip("192.168.100.11")), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 192.168.100.11 collides with the static address of mycluster-controlplane-01")},
		},
		{
			"vip in the reserved layout", only(vip("192.168.100.70")), none,
			config.Problems{inCluster("network.cluster.kubeapi_vip", "network.cluster.kubeapi_vip 192.168.100.70 is inside the SDN reserved layout (offsets 10-159 of 192.168.100.0/24 hold control-plane and worker addresses); pick an address between .2 and .9 or past offset 159")},
		},
		{"vip below the layout", only(vip("192.168.100.5")), none, nil},
		{"empty sdn", only(edit(t, sdnExample, set(s, "{}"), set("name", "mycl"))), none, nil},
	})
}

func TestDefaultVRFTag(t *testing.T) {
	t.Parallel()
	// Values from Python: 10000 + 2*(int(hashlib.sha256(name.encode()).hexdigest(), 16) % 8_000_000).
	want := map[string]int{"mycluster": 8868700, "demo": 14429412, "mycl": 9735104, "a": 8996998}
	got := map[string]int{}
	for name := range want {
		got[name] = config.DefaultVRFTag(name)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DefaultVRFTag (-want +got):\n%s", d)
	}
}

func TestCluster_Hostnames(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, edit(t, openstackBase, set("controlplane.count", "1"),
		set("workers", "{big: {count: 2, flavor: f, disk: 1}, none: {count: 0, flavor: f, disk: 1}, gpu: {count: 1, flavor: g, disk: 1}}")))
	want := []config.Machine{
		{Hostname: "demo-controlplane-01", Role: "controlplane", Pool: "controlplane", Index: 1},
		{Hostname: "demo-big-01", Role: "worker", Pool: "big", Index: 1},
		{Hostname: "demo-big-02", Role: "worker", Pool: "big", Index: 2},
		{Hostname: "demo-gpu-01", Role: "worker", Pool: "gpu", Index: 1},
	}
	if d := cmp.Diff(want, c.Hostnames(), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("Hostnames (-want +got):\n%s", d)
	}
	if got := config.Hostname("demo", "worker", 100); got != "demo-worker-100" {
		t.Errorf("Hostname(100) = %q", got)
	}
}
