package inspect

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

func TestMetadataFinding(t *testing.T) {
	t.Parallel()
	openstack := func(cluster, cp config.Patches) *config.Cluster {
		return &config.Cluster{
			OpenStack:    &config.OpenStack{},
			Talos:        config.Talos{ConfigPatches: cluster},
			ControlPlane: config.Pool{ConfigPatches: cp},
		}
	}
	cases := []struct {
		name      string
		cfg       *config.Cluster
		observed  string // a part of Observed
		attention bool
	}{
		{"default flannel", openstack(nil, nil), "CNI flannel (the Talos default), which does not enforce", true},
		{"flannel named", openstack(config.Patches{"cluster: {network: {cni: {name: flannel}}}\n"}, nil), "CNI flannel (set in talos.config_patches)", true},
		{"none for cilium", openstack(config.Patches{"cluster:\n  network:\n    cni:\n      name: none\n"}, nil), "CNI none (set in talos.config_patches): the policy holds only if it enforces", false},
		{
			"control-plane pool patch wins", openstack(config.Patches{"cluster: {network: {cni: {name: none}}}\n"}, config.Patches{"machine: {}\n---\ncluster: {network: {cni: {name: flannel}}}\n"}),
			"CNI flannel (set in controlplane.config_patches)", true,
		},
		{"unrelated patches", openstack(config.Patches{"machine: {network: {hostname: x}}\n", "cluster: {network: {dnsDomain: x}}\n"}, nil), "CNI flannel (the Talos default)", true},
		{"JSON patch", openstack(config.Patches{"- op: replace\n  path: /cluster/network/cni\n  value: {name: custom}\n"}, nil), "CNI unknown (a JSON patch) (set in talos.config_patches)", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, ok := metadataFinding(tc.cfg)
			if !ok {
				t.Fatal("no finding on OpenStack")
			}
			if !strings.Contains(f.Observed, tc.observed) {
				t.Errorf("observed %q, want it to contain %q", f.Observed, tc.observed)
			}
			if got := f.Attention != ""; got != tc.attention {
				t.Errorf("attention %q, want set=%v", f.Attention, tc.attention)
			}
			if tc.attention && !strings.Contains(f.Fix, "use a CNI that enforces NetworkPolicy") {
				t.Errorf("attention %q with fix %q names no fix", f.Attention, f.Fix)
			}
		})
	}
	if _, ok := metadataFinding(&config.Cluster{Proxmox: &config.Proxmox{}}); ok {
		t.Error("a finding on Proxmox, which has no metadata service")
	}
}
