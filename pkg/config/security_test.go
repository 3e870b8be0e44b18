package config_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

func TestSecurityRules_OpenPorts(t *testing.T) {
	t.Parallel()
	hosts := func(cidr string) []config.SecurityHost {
		return []config.SecurityHost{{Label: "h", CIDR: netip.MustParsePrefix(cidr)}}
	}
	cases := []struct {
		name  string
		rules config.SecurityRules
		want  []int
	}{
		{"none", nil, []int{80, 443}},
		{"unrelated", config.SecurityRules{{Name: "kubernetes", Port: 6443, Hosts: hosts("100.64.0.0/10")}}, []int{80, 443}},
		{"80 claimed by another name", config.SecurityRules{{Name: "ingress", Port: 80, Hosts: hosts("203.0.113.0/24")}}, []int{443}},
		{"443 claimed without hosts", config.SecurityRules{{Name: "https", Port: 443}}, []int{80}},
		{"both closed", config.SecurityRules{{Name: "http", Port: 80}, {Name: "https", Port: 443}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.rules.OpenPorts()); diff != "" {
				t.Errorf("OpenPorts (-want +got):\n%s", diff)
			}
		})
	}
}
