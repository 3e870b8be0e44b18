package nodes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcdTalos answers EtcdMembers from a script.
type etcdTalos struct {
	fakeTalos
	members []talosapi.Member
	err     error
}

func (f *etcdTalos) EtcdMembers(context.Context, string) ([]talosapi.Member, error) {
	return f.members, f.err
}

// TestProvedGone is I-S9/I-S10: an addressless control plane is deleted
// only when the survivor's etcd member list proves it is no member; a
// failed query, or a member without a name, refuses.
func TestProvedGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		members []talosapi.Member
		err     error
		refused string
	}{
		{"absent from the list: proven gone", []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}}, nil, ""},
		{"still a member", []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}, {ID: 0xab, Hostname: "t-controlplane-04"}}, nil, "still an etcd member (id 00000000000000ab on control plane 127.0.0.10); NotReady does not prove it left etcd"},
		{"an unnamed member could be it", []talosapi.Member{{ID: 1, Hostname: "t-controlplane-01"}, {ID: 2}}, nil, "added but never started"},
		{"the query failed", nil, errors.New("etcdserver: no leader"), "the etcd member list could not be read or proves nothing: refusing to delete it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := fakeRun(t, false)
			fake := &etcdTalos{fakeTalos: fakeTalos{log: log}, members: tc.members, err: tc.err}
			r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return fake, nil }
			err := r.survivor().provedGone(t.Context(), "t-controlplane-04")
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("err = %v, want one containing %q", err, tc.refused)
			}
		})
	}
}

// resetTalos answers Reset and EtcdMembers from a script and records
// member removals.
type resetTalos struct {
	etcdTalos
	resetErr error
	removed  []uint64
}

func (f *resetTalos) Reset(context.Context, string, talosapi.ResetOptions) error { return f.resetErr }

func (f *resetTalos) EtcdForfeitLeadership(context.Context, string) error { return nil }

func (f *resetTalos) EtcdRemoveMember(_ context.Context, _ string, id uint64) error {
	f.removed = append(f.removed, id)
	return nil
}

// TestResetControlPlane is I-S8: a control plane whose reset failed is
// deleted only when the survivor's etcd list proves it left; one that
// reset but is still listed is removed from etcd by id; a worker's failed
// reset is no reason to keep its machine.
func TestResetControlPlane(t *testing.T) {
	t.Parallel()
	cp1 := talosapi.Member{ID: 1, Hostname: "t-controlplane-01"}
	cp4 := talosapi.Member{ID: 4, Hostname: "t-controlplane-04"}
	for _, tc := range []struct {
		name         string
		controlPlane bool
		resetErr     error
		members      []talosapi.Member
		listErr      error
		refused      string
		removed      []uint64
	}{
		{"reset, left etcd", true, nil, []talosapi.Member{cp1}, nil, "", nil},
		{"reset, still listed: removed by id", true, nil, []talosapi.Member{cp1, cp4}, nil, "", []uint64{4}},
		{"failed, still a member: fatal", true, talosapi.ErrResetFailed, []talosapi.Member{cp1, cp4}, nil, "reset of control plane t-controlplane-04 failed and it is still an etcd member", nil},
		{"failed, but proven gone", true, talosapi.ErrResetTimedOut, []talosapi.Member{cp1}, nil, "", nil},
		{"failed, membership unknown: fatal", true, talosapi.ErrResetUnknown, nil, errors.New("no leader"), "whether it left etcd is unknown", nil},
		{"reset, membership unknown: fatal", true, nil, nil, errors.New("no leader"), "was reset but whether it left etcd is unknown", nil},
		{"a worker's failed reset", false, talosapi.ErrResetFailed, nil, errors.New("not asked"), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := fakeRun(t, false)
			fake := &resetTalos{etcdTalos: etcdTalos{fakeTalos: fakeTalos{log: log}, members: tc.members, err: tc.listErr}, resetErr: tc.resetErr}
			r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) { return fake, nil }
			gone := leaving{"t-controlplane-04": "127.0.0.40"}
			err := r.reset(t.Context(), removal{removalFacts: removalFacts{host: "t-controlplane-04", controlPlane: tc.controlPlane, address: "127.0.0.40"}}, gone)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("err = %v, want one containing %q", err, tc.refused)
			}
			if !slices.Equal(fake.removed, tc.removed) {
				t.Errorf("removed members %v, want %v", fake.removed, tc.removed)
			}
		})
	}
}

// An unanswered node list leaves every node's state unknown: the apply
// step refuses (I-R8 cannot be decided) and a removal reads "unknown",
// never "absent" (so an addressless node is refused, I-S5).
func TestUnknownNodeListRefuses(t *testing.T) {
	t.Parallel()
	r, _ := fakeRun(t, false)
	r.obs.inv = &provider.Inventory{}
	r.obs.nodesErr = errors.New("kube list nodes: timed out after 10s")
	if _, err := r.appliable(); err == nil || !strings.Contains(err.Error(), "which nodes to roll configuration out to is unknown; refusing") {
		t.Errorf("appliable: %v", err)
	}
	f := r.obs.removalFacts(preflight.Removal{Name: "t-worker-03"})
	if f.kube != kubeUnknown {
		t.Fatalf("kube state %s, want unknown", f.kube)
	}
	if _, err := planRemoval(f); err == nil || !strings.Contains(err.Error(), "no address for t-worker-03 but node is unknown in k8s") {
		t.Errorf("planRemoval: %v", err)
	}
}

// Scale-down removes only what the run's validation confirmed: a node
// that turned up as a removal since is refused, not removed unasked.
func TestOnlyConfirmedRemovals(t *testing.T) {
	t.Parallel()
	r, _ := fakeRun(t, false)
	r.confirmed = []string{"t-worker-03"}
	if err := onlyConfirmed([]preflight.Removal{{Name: "t-worker-03"}}, r.confirmed); err != nil {
		t.Errorf("confirmed: %v", err)
	}
	err := onlyConfirmed([]preflight.Removal{{Name: "t-worker-03"}, {Name: "stray"}}, r.confirmed)
	if err == nil || !strings.Contains(err.Error(), "refusing to remove stray: not among the removals this run validated and confirmed (t-worker-03)") {
		t.Errorf("unconfirmed: %v", err)
	}
}
