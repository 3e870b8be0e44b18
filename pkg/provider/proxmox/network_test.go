package proxmox_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/talosc/talosc/pkg/config"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
)

func networkSpec(cfg *config.Cluster) provider.NetworkSpec {
	var spec provider.NetworkSpec
	for _, m := range cfg.Hostnames() {
		spec.Machines = append(spec.Machines, provider.MachineNet{Hostname: m.Hostname, Role: m.Role, Pool: m.Pool})
	}
	return spec
}

func TestReconcileNetwork_BridgeAttachesOnly(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	spec := networkSpec(l.cfg)
	plan := &provider.Plan{}
	res, err := l.cloud.ReconcileNetwork(t.Context(), spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("127.20.0.2")
	want := &provider.NetworkResult{
		Kubernetes: provider.Endpoint{VIP: vip, Advertised: "127.20.0.2"},
		Network:    "vmbr0",
		Machines: []provider.MachineAddress{
			{Hostname: "c-controlplane-01"},
			{Hostname: "c-controlplane-02"},
			{Hostname: "c-controlplane-03"},
			{Hostname: "c-worker-01"},
			{Hostname: "c-worker-02"},
		},
	}
	if diff := cmp.Diff(want, res, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if len(plan.Changes()) != 0 {
		t.Errorf("changes %+v", plan.Changes())
	}
	l.noMutations(t)
	if cur, err := l.cloud.CurrentNetwork(t.Context(), spec); err != nil || !cmp.Equal(cur, res, cmpopts.EquateComparable(netip.Addr{})) {
		t.Errorf("CurrentNetwork = %+v, %v", cur, err)
	}
	if err := l.cloud.DestroyNetwork(t.Context(), &provider.Plan{}); err != nil {
		t.Error(err)
	}
	l.noMutations(t)
}

func TestReconcileNetwork_Refusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    labpx.Options
		c    labCluster
		want string
	}{
		{
			"missing bridge",
			labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve1", Bridges: []string{"vmbr1"}}, {Name: "pve2"}}, Bridges: []string{"vmbr0"}},
			labCluster{netCluster: "bridge: vmbr1"},
			`proxmox.network.cluster.bridge: bridge "vmbr1" does not exist on node pve2`,
		},
		{"missing vnet", labpx.Options{DatacenterFirewall: true}, labCluster{netCluster: "vnet: nope"}, `proxmox.network.cluster.vnet: SDN VNet "nope" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, tc.o, nil, tc.c)
			for _, dry := range []bool{true, false} {
				_, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{DryRun: dry})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("dry run %v: err = %v, want %q", dry, err, tc.want)
				}
			}
			l.noMutations(t)
		})
	}
}

// A VNet applied on every node is attached to like a bridge; the SDN.Use
// privilege is checked on its zone's path.
func TestReconcileNetwork_VNet(t *testing.T) {
	t.Parallel()
	l := newLab(t, labpx.Options{DatacenterFirewall: true}, nil, labCluster{netCluster: "vnet: labnet"})
	for _, o := range []struct {
		kind labpx.SDNKind
		id   string
		p    map[string]string
	}{
		{labpx.SDNZones, "labz", map[string]string{"type": "simple"}},
		{labpx.SDNVNets, "labnet", map[string]string{"type": "vnet", "zone": "labz"}},
	} {
		if err := l.srv.StageSDN(o.kind, o.id, o.p); err != nil {
			t.Fatal(err)
		}
	}
	l.srv.ApplySDN()
	res, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{})
	if err != nil || res.Network != "labnet" {
		t.Fatalf("result %+v, %v", res, err)
	}
	env, err := l.cloud.Preflight(t.Context(), l.cfg)
	if err != nil || env.VNetZone != "labz" {
		t.Errorf("env %+v, %v", env, err)
	}
}
