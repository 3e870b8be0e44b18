package nodes

import (
	"context"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// An etcd member list that does not name the survivor that answered it
// (empty, or another cluster's) proves nothing (I-S15): it neither
// proves an addressless control plane gone (I-S9), nor settles a
// timed-out reset as "left etcd" (I-S8), nor lets a control-plane
// upgrade go on.
func TestMemberListWithoutTheSurvivorProvesNothing(t *testing.T) {
	t.Parallel()
	const refused = "does not name t-controlplane-01 itself"
	for _, tc := range []struct {
		name    string
		members []talosapi.Member
	}{
		{"empty list", nil},
		{"a list without the survivor", []talosapi.Member{{ID: 9, Hostname: "someone-else"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := fakeRun(t, false)
			fake := &etcdTalos{fakeTalos: fakeTalos{log: log}, members: tc.members}
			r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return fake, nil }
			if err := r.survivor().provedGone(t.Context(), "t-controlplane-04"); err == nil || !strings.Contains(err.Error(), refused) {
				t.Errorf("provedGone: %v, want a refusal containing %q (its machine would be deleted)", err, refused)
			}
			ups := []talosUpgrade{{machine: config.Machine{Hostname: "t-controlplane-02", Role: config.RoleControlPlane}}}
			if err := r.survivor().allowsUpgrade(t.Context(), ups); err == nil || !strings.Contains(err.Error(), refused) {
				t.Errorf("etcdAllowsUpgrade: %v, want a refusal containing %q", err, refused)
			}
			gone := leaving{"t-controlplane-04": "127.0.0.40"}
			rf := &resetTalos{etcdTalos: etcdTalos{fakeTalos: fakeTalos{log: log}, members: tc.members}, resetErr: talosapi.ErrResetTimedOut}
			r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return rf, nil }
			r.clients.talos = nil
			if err := r.reset(t.Context(), removal{removalFacts: removalFacts{host: "t-controlplane-04", controlPlane: true, address: "127.0.0.40"}}, gone); err == nil || !strings.Contains(err.Error(), refused) {
				t.Errorf("reset: %v, want a refusal containing %q (a timed-out reset settled as 'left etcd')", err, refused)
			}
		})
	}
}
