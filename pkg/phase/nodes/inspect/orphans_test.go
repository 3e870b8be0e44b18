package inspect

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/report"
)

func TestFindOrphans(t *testing.T) {
	t.Parallel()
	px := &config.Cluster{Name: "c", Proxmox: &config.Proxmox{}, ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: 1}, Workers: config.Pools{{Name: "worker", Count: 2}}}
	os := &config.Cluster{Name: "c", OpenStack: &config.OpenStack{}, ControlPlane: config.Pool{Name: config.RoleControlPlane, Count: 1}}
	for _, tc := range []struct {
		name string
		cfg  *config.Cluster
		kind string
		inv  []provider.Machine
		want []report.Orphan
	}{
		{"nothing owned", px, "proxmox:vm", nil, []report.Orphan{}},
		{"every owned machine desired", px, "proxmox:vm", []provider.Machine{{Hostname: "c-controlplane-01"}, {Hostname: "c-worker-02"}}, []report.Orphan{}},
		{
			"a crashed run's machine and a pending scale-down", px, "proxmox:vm",
			[]provider.Machine{{Hostname: "c-worker-03", ID: "103", Status: "Running"}, {Hostname: "c-controlplane-01", ID: "100"}, {Hostname: "c-gpu-01", ID: "120", Status: "stopped"}},
			[]report.Orphan{{Kind: "vm", Hostname: "c-worker-03", ID: "103", Status: "running"}, {Kind: "vm", Hostname: "c-gpu-01", ID: "120", Status: "stopped"}},
		},
		{"an openstack server", os, "openstack:server", []provider.Machine{{Hostname: "c-worker-01", ID: "uuid", Status: "ACTIVE"}}, []report.Orphan{{Kind: "server", Hostname: "c-worker-01", ID: "uuid", Status: "active"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := findOrphans(tc.cfg, &provider.Inventory{Machines: tc.inv}, tc.kind)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("orphans (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingCredential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  *config.Cluster
		want string
	}{
		{"proxmox with a token", &config.Cluster{Proxmox: &config.Proxmox{TokenID: "u@pve!t", TokenSecret: "s"}}, ""},
		{"proxmox without secrets.yaml", &config.Cluster{Proxmox: &config.Proxmox{}}, "proxmox.token_id"},
		{"proxmox scaffolded", &config.Cluster{Proxmox: &config.Proxmox{TokenID: "u@pve!t", TokenSecret: " CHANGE-ME "}}, "proxmox.token_secret"},
		{"openstack with a credential", &config.Cluster{OpenStack: &config.OpenStack{CredentialID: "id", CredentialSecret: "s"}}, ""},
		{"openstack with a blank secret", &config.Cluster{OpenStack: &config.OpenStack{CredentialID: "id", CredentialSecret: "  "}}, "openstack.credential_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := missingCredential(tc.cfg); got != tc.want {
				t.Errorf("missing %q, want %q", got, tc.want)
			}
		})
	}
}
