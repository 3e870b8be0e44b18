package lab_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/lab/talosnode/talosnodetest"
)

// TestEtcdRestoreFromSnapshot is Talos's disaster recovery on the lab,
// through machinery's client: a snapshot holding ConfigMap A (B comes
// after it); a reset wiping EPHEMERAL on two control planes and the
// lab's out-of-band wipe of the third lose the cluster's etcd (the API
// serves neither); Bootstrap with RecoverEtcd
// fails in the etcd service without an upload and with a corrupted one;
// EtcdRecover + Bootstrap{RecoverEtcd} on cp-01 brings back A and not B,
// at a revision not below the snapshot's, and the others join; a node
// with data refuses the bootstrap; LosesRestoreAtReboot loses A at
// cp-01's reboot, not at another's; every etcd lost again, a plain
// bootstrap serves an empty cluster.
func TestEtcdRestoreFromSnapshot(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.125.0/24", 3, 0)
	b := c.build(l)
	createConfigMap(t, b.kube, "a")
	tc, nctx := c.talos(b.controlPlanes[0].String())
	path := filepath.Join(t.TempDir(), "db.snapshot")
	if err := saveSnapshot(nctx, tc, path); err != nil {
		t.Fatalf("EtcdSnapshot: %v", err)
	}
	snap, err := talosnodetest.ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, b.kube, "b")

	wipeEphemeral(t, c, b.controlPlanes[0])
	wipeEphemeral(t, c, b.controlPlanes[1])
	wipeOutOfBand(t, l, b.controlPlanes[2])
	for _, cp := range b.controlPlanes {
		waitEtcdService(t, c, cp, "Preparing", "Running pre state")
	}
	if _, err := b.kube.CoreV1().ConfigMaps("default").Get(ctx, "a", metav1.GetOptions{}); err == nil {
		t.Error("the API still serves ConfigMap a with every control plane's etcd data wiped")
	}

	recoverRefusals(t, c, b.controlPlanes[0], path)
	upload(t, tc, nctx, path)
	bootstrapRecover(t, tc, nctx)
	waitEtcdService(t, c, b.controlPlanes[0], "Running", "Health check successful")
	kube := kubeClient(t, tc, nctx)
	eventually(t, "the restored API serves a, not b", time.Minute, func() error { return serves(ctx, kube, true) })
	after := filepath.Join(t.TempDir(), "after.snapshot")
	if err := saveSnapshot(nctx, tc, after); err != nil {
		t.Fatal(err)
	}
	if got, err := talosnodetest.ReadSnapshot(after); err != nil || got.Status.Revision < snap.Status.Revision {
		t.Errorf("revision after the restore %d (%v), want at least the snapshot's %d", got.Status.Revision, err, snap.Status.Revision)
	}
	eventually(t, "the other control planes join", time.Minute, func() error { return membersUp(l, c.cfg.Name, 3) })
	err = tc.Bootstrap(nctx, &machine.BootstrapRequest{RecoverEtcd: true})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "etcd data directory is not empty") {
		t.Errorf("Bootstrap{RecoverEtcd} of a node with data: %v, want AlreadyExists", err)
	}

	losesAtReboot(t, c, b, kube)

	// every etcd lost again, a plain bootstrap starts an empty one
	for _, cp := range b.controlPlanes {
		wipeOutOfBand(t, l, cp)
	}
	waitEtcdService(t, c, b.controlPlanes[0], "Preparing", "Running pre state")
	bootstrap(t, tc, nctx)
	eventually(t, "a new, empty etcd after a bootstrap", time.Minute, func() error { return serves(ctx, kube, false) })
}

// recoverRefusals: Bootstrap{RecoverEtcd} answers, then the etcd
// service fails, without an upload and with a snapshot whose sha256
// trailer does not match (Talos checks both in the service, after the
// answer).
func recoverRefusals(t *testing.T, c *osCluster, cp netip.Addr, path string) {
	t.Helper()
	tc, nctx := c.talos(cp.String())
	bootstrapRecover(t, tc, nctx)
	waitEtcdService(t, c, cp, "Failed", "Failed to run pre stage: error verifying snapshot: open "+constants.EtcdRecoverySnapshotPath+": no such file or directory")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.snapshot")
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	upload(t, tc, nctx, bad)
	bootstrapRecover(t, tc, nctx)
	waitEtcdService(t, c, cp, "Failed", "Failed to run pre stage: error recovering from the snapshot: ")
}

// losesAtReboot: with LosesRestoreAtReboot on every control plane, a
// reboot of one that was not recovered keeps ConfigMap a; the recovered
// one's loses it.
func losesAtReboot(t *testing.T, c *osCluster, b *build, kube kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	for _, cp := range b.controlPlanes {
		n := b.node(cp)
		k := n.Knobs()
		k.LosesRestoreAtReboot = true
		n.SetKnobs(k)
	}
	reboot(t, c, b.controlPlanes[1])
	time.Sleep(2 * time.Second)
	eventually(t, "the API serves a after cp-02's reboot", time.Minute, func() error { return serves(ctx, kube, true) })
	reboot(t, c, b.controlPlanes[0])
	eventually(t, "the API loses a at cp-01's reboot", time.Minute, func() error { return serves(ctx, kube, false) })
}

func createConfigMap(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": name}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serves checks whether the API serves ConfigMap a, and that it does not
// serve b (created after the snapshot).
func serves(ctx context.Context, kube kubernetes.Interface, a bool) error {
	for name, want := range map[string]bool{"a": a, "b": false} {
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			return err
		case (err == nil) != want:
			return fmt.Errorf("ConfigMap %s served: %v, want %v", name, err == nil, want)
		}
	}
	return nil
}

// wipeOutOfBand loses the node's EPHEMERAL through the lab's control
// API (a failed disk).
func wipeOutOfBand(t *testing.T, l *lab.Lab, addr netip.Addr) {
	t.Helper()
	rec := httptest.NewRecorder()
	l.ControlHandler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/nodes/"+addr.String()+"/wipe-ephemeral", http.NoBody))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("wipe-ephemeral %s: %d %s", addr, rec.Code, rec.Body)
	}
}

// wipeEphemeral resets the node's EPHEMERAL (etcd's data), not
// gracefully, and reboots it, as Talos's disaster recovery says.
func wipeEphemeral(t *testing.T, c *osCluster, addr netip.Addr) {
	t.Helper()
	tc, nctx := c.talos(addr.String())
	err := tc.ResetGeneric(nctx, &machine.ResetRequest{
		Reboot: true, Graceful: false,
		SystemPartitionsToWipe: []*machine.ResetPartitionSpec{{Label: constants.EphemeralPartitionLabel, Wipe: true}},
	})
	if err != nil {
		t.Fatalf("reset EPHEMERAL of %s: %v", addr, err)
	}
}

func reboot(t *testing.T, c *osCluster, addr netip.Addr) {
	t.Helper()
	tc, nctx := c.talos(addr.String())
	if err := tc.Reboot(nctx); err != nil {
		t.Fatalf("reboot %s: %v", addr, err)
	}
}

// waitEtcdService waits until the node's etcd service is in state with a
// last message starting with msg.
func waitEtcdService(t *testing.T, c *osCluster, addr netip.Addr, state, msg string) {
	t.Helper()
	tc, nctx := c.talos(addr.String())
	eventually(t, fmt.Sprintf("etcd of %s %s", addr, state), time.Minute, func() error {
		list, err := tc.ServiceInfo(nctx, "etcd")
		if err != nil {
			return err
		}
		if len(list) != 1 {
			return fmt.Errorf("etcd services %v", list)
		}
		s := list[0].Service
		if s.GetState() != state || !strings.HasPrefix(s.GetHealth().GetLastMessage(), msg) {
			return fmt.Errorf("etcd %s %q, want %s %q", s.GetState(), s.GetHealth().GetLastMessage(), state, msg)
		}
		return nil
	})
}

// upload streams the snapshot at path with EtcdRecover.
func upload(t *testing.T, tc *client.Client, nctx context.Context, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.EtcdRecover(nctx, bytes.NewReader(data)); err != nil {
		t.Fatalf("EtcdRecover: %v", err)
	}
}

// bootstrapRecover is Bootstrap{RecoverEtcd}, retried while the node
// answers "bootstrap is not available yet" (its etcd may wait in
// Preparing before its boot allows a bootstrap).
func bootstrapRecover(t *testing.T, tc *client.Client, nctx context.Context) {
	t.Helper()
	eventually(t, "Bootstrap{RecoverEtcd}", 20*time.Second, func() error {
		return tc.Bootstrap(nctx, &machine.BootstrapRequest{RecoverEtcd: true})
	})
}

// membersUp checks that the cluster's etcd has n members, all up.
func membersUp(l *lab.Lab, cluster string, n int) error {
	for _, c := range l.TalosClusters() {
		if c.Name() != cluster {
			continue
		}
		var up []talosnode.EtcdMember
		for _, m := range c.EtcdMembers() {
			if m.Up && !m.Learner {
				up = append(up, m)
			}
		}
		if len(up) != n {
			return fmt.Errorf("etcd members up %v, want %d", c.EtcdMembers(), n)
		}
		return nil
	}
	return fmt.Errorf("no cluster %s", cluster)
}
