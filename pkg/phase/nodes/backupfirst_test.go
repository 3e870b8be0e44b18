package nodes

import (
	"context"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// The backup before a risky change comes before the first op the policy
// guards, before the barrier and any change, and stops the rollout when it
// fails; ops it does not guard take none.
func TestExecuteTakesTheBackupBeforeTheFirstGuardedOp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		guard   guard
		workers bool // worker ops only
		fail    bool
		want    []string
	}{
		{"control planes guarded", guardControlPlanes, false, false, []string{"backup before upgrading t-controlplane-01", "health", "t-controlplane-01"}},
		{"workers only: none", guardControlPlanes, true, false, []string{"health", "t-worker-01"}},
		{"a kubernetes upgrade guards every op", guardAll, true, false, []string{"backup before upgrading t-worker-01", "health", "t-worker-01"}},
		{"unguarded", guardNone, false, false, []string{"health", "t-controlplane-01"}},
		{"a failed backup changes nothing", guardControlPlanes, false, true, []string{"backup before upgrading t-controlplane-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, log := fakeRun(t, false)
			ops := recordingOps(r, log)
			if tc.workers {
				ops = ops[3:]
			}
			e := r.executor()
			e.safeguard = func(_ context.Context, what, first string) error {
				*log = append(*log, "backup before "+what+" "+first)
				if tc.fail {
					return errors.New("target not writable")
				}
				return nil
			}
			err := e.execute(t.Context(), policy{what: "upgrading", order: workersOneByOne, barrier: barrier{before: true}, guard: tc.guard}, ops[:1])
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v", err)
			}
			if d := cmp.Diff(tc.want, *log); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// etcdDown is a Talos session whose etcd proves no quorum.
type etcdDown struct{ fakeTalos }

func (*etcdDown) EtcdMembers(context.Context, string) ([]talosapi.Member, error) {
	return nil, errors.New("etcdserver: no leader")
}

// backupFirst takes one backup per run, only with a backup section: a
// plan says it would, --no-backup says it skips it, and a backup that
// cannot be taken fails the run naming the change it guards.
func TestBackupFirst(t *testing.T) {
	t.Parallel()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	withBackup := func(r *run) { r.cfg.Backup = &config.Backup{Recipients: []string{id.Recipient().String()}} }
	t.Run("no backup section", func(t *testing.T) {
		t.Parallel()
		r, _ := fakeRun(t, false)
		if err := r.backupFirst(t.Context(), "upgrading", "t-controlplane-01"); err != nil || r.backedUp {
			t.Fatalf("err %v, backedUp %v", err, r.backedUp)
		}
	})
	t.Run("a plan says it would, once", func(t *testing.T) {
		t.Parallel()
		r, _ := fakeRun(t, true)
		withBackup(r)
		var notes []string
		r.plan.Note = func(msg string) { notes = append(notes, msg) }
		for range 2 {
			if err := r.backupFirst(t.Context(), "upgrading", "t-controlplane-01"); err != nil {
				t.Fatal(err)
			}
		}
		if d := cmp.Diff([]string{"would take a verified backup of etcd before upgrading t-controlplane-01"}, notes); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	t.Run("no-backup skips it", func(t *testing.T) {
		t.Parallel()
		r, _ := fakeRun(t, false)
		withBackup(r)
		r.in.NoBackup = true
		if err := r.backupFirst(t.Context(), "upgrading", "t-controlplane-01"); err != nil || r.backedUp {
			t.Fatalf("err %v, backedUp %v", err, r.backedUp)
		}
	})
	t.Run("a failed backup fails the run", func(t *testing.T) {
		t.Parallel()
		r, log := fakeRun(t, false)
		withBackup(r)
		r.clients.seams.dialTalos = func(context.Context, *identity.Identity, string, string) (talosAPI, error) {
			return &etcdDown{fakeTalos{log: log}}, nil
		}
		err := r.backupFirst(t.Context(), "upgrading", "t-controlplane-01")
		if err == nil || !strings.Contains(err.Error(), "the backup before upgrading t-controlplane-01 failed, so nothing was changed") || !strings.Contains(err.Error(), "no leader") {
			t.Fatalf("err = %v", err)
		}
	})
}
