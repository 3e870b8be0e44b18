package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// TestStaleMembers: a member cluster.yaml does not desire and whose
// machine is gone is removed only when its Kubernetes node is absent or
// NotReady; desired members and members whose machine still exists
// (scale-down's business) are not looked at; a Ready or unknown node, or
// a member without a name, is kept and said.
func TestStaleMembers(t *testing.T) {
	t.Parallel()
	desired := func(h string) bool { return h == "t-controlplane-01" }
	machine := func(h string) bool { return h == "t-controlplane-01" || h == "t-controlplane-02" }
	for _, tc := range []struct {
		name   string
		member talosapi.Member
		kube   kubeState
		want   string // "": not looked at; "remove" or "keep"
		why    string
	}{
		{"desired", talosapi.Member{ID: 5, Hostname: "t-controlplane-01"}, kubeReady, "", ""},
		{"machine still there: scale-down's", talosapi.Member{ID: 6, Hostname: "t-controlplane-02"}, kubeNotReady, "", ""},
		{"machine gone, no node", talosapi.Member{ID: 3, Hostname: "t-controlplane-03"}, kubeAbsent, "remove", "id 0000000000000003: cluster.yaml does not desire it, its machine is gone, its Kubernetes node is absent"},
		{"machine gone, node NotReady", talosapi.Member{ID: 3, Hostname: "t-controlplane-03"}, kubeNotReady, "remove", "its Kubernetes node is NotReady"},
		{"machine gone, node Ready", talosapi.Member{ID: 3, Hostname: "t-controlplane-03"}, kubeReady, "keep", "its Kubernetes node is Ready: it may be a discovery failure"},
		{"machine gone, node list failed", talosapi.Member{ID: 3, Hostname: "t-controlplane-03"}, kubeUnknown, "keep", "its Kubernetes node is unknown"},
		{"unnamed", talosapi.Member{ID: 4}, kubeAbsent, "keep", "added but never started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			others := []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}, {ID: 2, Hostname: "t-controlplane-02"}}
			got := staleMembers(append(others, tc.member), desired, machine, func(string) kubeState { return tc.kube })
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("looked at: %+v", got)
			case tc.want == "":
			case len(got) != 1 || got[0].remove != (tc.want == "remove") || !strings.Contains(got[0].why, tc.why):
				t.Errorf("got %+v, want %s because %q", got, tc.want, tc.why)
			}
		})
	}
}

// TestStaleMembersLeaveAMajority: members whose machines are gone are
// removed only when the rest are a majority of the member list (a leader
// answered it, so a majority is alive); else none is removed.
func TestStaleMembersLeaveAMajority(t *testing.T) {
	t.Parallel()
	none := func(string) bool { return false }
	absent := func(string) kubeState { return kubeAbsent }
	cps := func(n int) []talosapi.Member {
		var out []talosapi.Member
		for i := 1; i <= n; i++ {
			out = append(out, talosapi.Member{ID: uint64(i), Hostname: fmt.Sprintf("t-controlplane-%02d", i)})
		}
		return out
	}
	for _, tc := range []struct {
		members, desired, removed int
	}{
		{3, 2, 1},
		{5, 3, 2},
		{3, 1, 0},
		{2, 1, 0},
		{5, 2, 0},
	} {
		desired := func(h string) bool { return h <= fmt.Sprintf("t-controlplane-%02d", tc.desired) }
		removed := 0
		for _, s := range staleMembers(cps(tc.members), desired, none, absent) {
			switch {
			case s.remove:
				removed++
			case !strings.Contains(s.why, "refusing to remove any"):
				t.Errorf("%d members: kept %s because %q", tc.members, s.member.Hostname, s.why)
			}
		}
		if removed != tc.removed {
			t.Errorf("%d members, %d desired: %d removed, want %d", tc.members, tc.desired, removed, tc.removed)
		}
	}
}

// staleTalos answers the member list and records removals.
type staleTalos struct {
	etcdTalos
	removed []uint64
}

func (f *staleTalos) EtcdRemoveMember(_ context.Context, _ string, id uint64) error {
	f.removed = append(f.removed, id)
	return nil
}

// staleRun is a run of three desired control planes whose machines
// exist, with t-controlplane-04 an etcd member whose machine is gone
// and whose Node is NotReady; the plan's changes are recorded.
func staleRun(t *testing.T, dryRun bool, members []talosapi.Member, listErr error) (*run, *staleTalos, *[]state.Change) {
	t.Helper()
	r, log := fakeRun(t, dryRun)
	r.obs.inv = &provider.Inventory{}
	for _, m := range r.desired {
		r.obs.inv.Machines = append(r.obs.inv.Machines, provider.Machine{Hostname: m.Hostname, Role: m.Role})
	}
	r.obs.nodes = []kube.Node{{Name: "t-controlplane-04"}}
	fake := &staleTalos{etcdTalos: etcdTalos{fakeTalos: fakeTalos{log: log}, members: members, err: listErr}}
	r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return fake, nil }
	var changes []state.Change
	r.plan.Progress = func(c state.Change) { changes = append(changes, c) }
	return r, fake, &changes
}

// TestRemoveStaleMembers: converge removes by id, through the surviving
// control plane, a member whose machine is gone and which cluster.yaml
// does not desire, with a plan line (a plan removes nothing); a member
// list that proves nothing (no leader, or one without the survivor)
// removes nothing.
func TestRemoveStaleMembers(t *testing.T) {
	t.Parallel()
	members := []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}, {ID: 2, Hostname: "t-controlplane-02"}, {ID: 3, Hostname: "t-controlplane-03"}, {ID: 4, Hostname: "t-controlplane-04"}}
	for _, tc := range []struct {
		name    string
		dryRun  bool
		members []talosapi.Member
		listErr error
		removed []uint64
		planned bool
	}{
		{"converge", false, members, nil, []uint64{4}, true},
		{"plan", true, members, nil, nil, true},
		{"no leader", false, nil, errors.New("etcdserver: no leader"), nil, false},
		{"a list without the survivor", false, members[1:], nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, fake, changes := staleRun(t, tc.dryRun, tc.members, tc.listErr)
			removed, err := r.removeStaleMembers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(fake.removed, tc.removed) || removed["t-controlplane-04"] != tc.planned {
				t.Errorf("removed %v (decided %v), want %v", fake.removed, removed, tc.removed)
			}
			want := state.Change{
				Action: state.ActionDelete, Kind: KindEtcdMember, Name: "t-controlplane-04",
				Detail: "id 0000000000000004: cluster.yaml does not desire it, its machine is gone, its Kubernetes node is NotReady; removed through t-controlplane-01",
			}
			if got := slices.Contains(*changes, want); got != tc.planned || len(*changes) > 1 {
				t.Errorf("plan %+v, want the member's removal %v", *changes, tc.planned)
			}
		})
	}
}

// TestScaleDownPlansStaleMemberFirst: a control plane whose machine is
// gone but whose NotReady Node and etcd member remain: the plan removes
// the member by id, then the Node (confirmed), where before scale-down
// refused it as "still an etcd member" (I-S9: the same member list is
// the evidence).
func TestScaleDownPlansStaleMemberFirst(t *testing.T) {
	t.Parallel()
	members := []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}, {ID: 2, Hostname: "t-controlplane-02"}, {ID: 3, Hostname: "t-controlplane-03"}, {ID: 4, Hostname: "t-controlplane-04"}}
	r, fake, changes := staleRun(t, true, members, nil)
	r.confirmed = []string{"t-controlplane-04"}
	if err := r.scaleDown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range *changes {
		got = append(got, c.Kind+" "+c.Name)
	}
	if want := []string{KindEtcdMember + " t-controlplane-04", KindKubeNode + " t-controlplane-04"}; !slices.Equal(got, want) || len(fake.removed) != 0 {
		t.Errorf("plan %q, removed %v; want %q and nothing removed", got, fake.removed, want)
	}
}
