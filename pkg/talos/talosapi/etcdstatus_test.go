package talosapi_test

import (
	"slices"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/talosc/talosc/pkg/backup/snapshot/snapshottest"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// TestEtcdStatus: a running control plane answers EtcdStatus over mTLS
// from the lab's real etcd: its member's id, the leader, the database's
// size; an alarm raised on that etcd (NOSPACE) is named; a worker, which
// runs no etcd, fails, as does a control plane whose etcd never started.
func TestEtcdStatus(t *testing.T) {
	t.Parallel()
	endpoint := snapshottest.Endpoint(t)
	c := newCluster(t, 2, 1, talosnode.Options{EtcdEndpoint: func(*talosnode.Cluster) string { return endpoint }})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(cp2, talosnode.Knobs{EtcdNeverStarts: true})
	c.booted(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	if err := cl.Bootstrap(t.Context(), node, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var id uint64
	for _, m := range waitMembers(t, cl, node, 2) {
		if m.Hostname == cp1 {
			id = m.ID
		}
	}
	st, err := cl.EtcdStatus(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if st.MemberID != id || st.Leader != id || st.Learner || st.DBSize <= 0 || st.DBSizeInUse <= 0 || st.Version == "" || len(st.Alarms) != 0 {
		t.Fatalf("status %+v, want member %016x leading, a database, no alarm", st, id)
	}

	raiseNoSpace(t, endpoint)
	if st, err = cl.EtcdStatus(t.Context(), node); err != nil || !slices.Equal(st.Alarms, []string{"NOSPACE"}) {
		t.Fatalf("status after NOSPACE: %+v, %v; want the alarm named", st, err)
	}

	if _, err := cl.EtcdStatus(t.Context(), c.addr(worker1)); err == nil {
		t.Error("a worker answered EtcdStatus")
	}
	if _, err := cl.EtcdStatus(t.Context(), c.addr(cp2)); err == nil {
		t.Error("a control plane whose etcd never started answered EtcdStatus")
	}
}

// raiseNoSpace activates etcd's NOSPACE alarm on the etcd at endpoint, as
// etcd does itself when its database reaches the quota.
func raiseNoSpace(t *testing.T, endpoint string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Context: t.Context(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	st, err := cli.Status(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: st.Header.GetMemberId(), Alarm: pb.AlarmType_NOSPACE}
	if _, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Alarm(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}
