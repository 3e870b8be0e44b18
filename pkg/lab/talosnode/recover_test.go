package talosnode_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// etcdHooks records the fleet's EtcdLost and EtcdRestore calls; a restore
// fills a directory of the test and checks etcd's restore wrote a member
// there.
type etcdHooks struct {
	t        *testing.T
	mu       sync.Mutex
	lost     int
	restores int
	emptied  int
}

func (h *etcdHooks) options(endpoint string) talosnode.Options {
	return talosnode.Options{
		EtcdEndpoint: func(*talosnode.Cluster) string { return endpoint },
		EtcdLost: func(*talosnode.Cluster) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.lost++
		},
		EtcdRestore: func(_ talosnode.BootstrapInfo, fill func(string) error) error {
			if fill == nil {
				h.mu.Lock()
				defer h.mu.Unlock()
				h.emptied++
				return nil
			}
			dir := filepath.Join(h.t.TempDir(), "etcd")
			if err := fill(dir); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(dir, "member", "snap", "db")); err != nil {
				return err
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			h.restores++
			return nil
		},
	}
}

func (h *etcdHooks) counts() (lost, restores, emptied int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost, h.restores, h.emptied
}

// TestEtcdWipeAndRecover: a reset wiping EPHEMERAL keeps the
// configuration and loses the etcd data; two of three wiped wait for a
// quorum that is gone; the third wiped loses the cluster's etcd
// (EtcdLost); Bootstrap{RecoverEtcd} fails in the etcd service without an
// upload, restores an uploaded snapshot with etcd's restore (EtcdRestore)
// and the others join; LosesRestoreAtReboot empties the etcd at cp-01's
// next reboot only.
func TestEtcdWipeAndRecover(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	endpoint := startEtcd(t, fx.vip)
	put(t, endpoint, "/lab/marker", "real etcd")
	hooks := &etcdHooks{t: t}
	l := newLab(t, fx, hooks.options(endpoint))
	l.bootstrapped()
	snap := rawSnapshot(t, l.client(cp(1)))

	l.wipeEphemeral(cp(2))
	l.wipeEphemeral(cp(3))
	l.waitEtcd(cp(2), "Preparing")
	l.waitEtcd(cp(3), "Preparing")
	if cl := l.nodes[cp(2)].Cluster(); cl == nil || cl.Quorum() {
		t.Fatalf("two of three control planes wiped: cluster %v, want it kept without quorum", cl)
	}
	time.Sleep(50 * time.Millisecond) // a few join retries
	if lost, _, _ := hooks.counts(); lost != 0 || l.startedMembers() != 3 {
		t.Fatalf("cp-01 keeps its data: EtcdLost %d times, %d started members (the wiped ones still listed)", lost, l.startedMembers())
	}
	l.wipeEphemeral(cp(1))
	l.waitEtcd(cp(1), "Preparing")
	eventually(t, "EtcdLost", func() bool { lost, _, _ := hooks.counts(); return lost == 1 })

	c1 := l.client(cp(1))
	l.recoverBootstrap(c1)
	l.waitEtcd(cp(1), "Failed")
	if _, err := c1.EtcdRecover(ctx(t, 5*time.Second), bytes.NewReader(snap)); err != nil {
		t.Fatalf("EtcdRecover: %v", err)
	}
	l.recoverBootstrap(c1)
	eventually(t, "3 started etcd members after the recovery", func() bool { return l.startedMembers() == 3 })
	if _, restores, _ := hooks.counts(); restores != 1 {
		t.Fatalf("EtcdRestore filled %d times, want 1", restores)
	}
	err := c1.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{RecoverEtcd: true})
	if status.Code(err) != codes.AlreadyExists {
		t.Fatalf("Bootstrap{RecoverEtcd} with data: %v, want AlreadyExists", err)
	}
	if _, err := l.client(worker).EtcdRecover(ctx(t, 2*time.Second), bytes.NewReader(snap)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("EtcdRecover on a worker: %v, want Unimplemented", err)
	}

	for _, h := range []string{cp(1), cp(2)} {
		l.nodes[h].SetKnobs(talosnode.Knobs{LosesRestoreAtReboot: true})
	}
	l.reboot(cp(2))
	if _, _, emptied := hooks.counts(); emptied != 0 {
		t.Fatal("a reboot of a control plane that was not recovered emptied the etcd")
	}
	l.reboot(cp(1))
	eventually(t, "the recovered node's reboot empties the etcd", func() bool { _, _, e := hooks.counts(); return e == 1 })
	l.reboot(cp(1))
	if _, _, emptied := hooks.counts(); emptied != 1 {
		t.Fatalf("the etcd emptied %d times, want once (the first reboot only)", emptied)
	}
}

// rawSnapshot is the node's EtcdSnapshot stream.
func rawSnapshot(t *testing.T, c *client.Client) []byte {
	t.Helper()
	rd, err := c.EtcdSnapshot(ctx(t, 10*time.Second), &machine.EtcdSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wipeEphemeral resets host's EPHEMERAL, not gracefully, with a reboot,
// and waits for it to run again with its configuration.
func (l *lab) wipeEphemeral(host string) {
	l.t.Helper()
	boots := l.nodes[host].Status().Boots
	err := l.client(host).ResetGeneric(ctx(l.t, 2*time.Second), &machine.ResetRequest{
		Reboot:                 true,
		SystemPartitionsToWipe: []*machine.ResetPartitionSpec{{Label: constants.EphemeralPartitionLabel, Wipe: true}},
	})
	if err != nil {
		l.t.Fatalf("reset EPHEMERAL of %s: %v", host, err)
	}
	l.waitReboot(host, boots)
	if st := l.nodes[host].Status(); st.Maintenance || st.Cluster == "" {
		l.t.Fatalf("%s after a reset of EPHEMERAL: %+v, want its configuration kept", host, st)
	}
}

// reboot reboots host through the API and waits for it.
func (l *lab) reboot(host string) {
	l.t.Helper()
	boots := l.nodes[host].Status().Boots
	if err := l.client(host).Reboot(ctx(l.t, 2*time.Second)); err != nil {
		l.t.Fatal(err)
	}
	l.waitReboot(host, boots)
}

// waitEtcd waits until host's etcd service is in state.
func (l *lab) waitEtcd(host, state string) {
	l.t.Helper()
	c := l.client(host)
	eventually(l.t, host+" etcd "+state, func() bool {
		list, err := c.ServiceInfo(ctx(l.t, 2*time.Second), "etcd")
		return err == nil && len(list) == 1 && list[0].Service.GetState() == state
	})
}

// recoverBootstrap is Bootstrap{RecoverEtcd} once the node allows it.
func (l *lab) recoverBootstrap(c *client.Client) {
	l.t.Helper()
	eventually(l.t, "Bootstrap{RecoverEtcd}", func() bool {
		return c.Bootstrap(ctx(l.t, 2*time.Second), &machine.BootstrapRequest{RecoverEtcd: true}) == nil
	})
}
