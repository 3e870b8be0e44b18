package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/rogpeppe/go-internal/testscript"
)

// wipeEtcd checks "lab wipe-etcd NAME...": the EPHEMERAL of each Talos
// node NAME is lost out of band (the lab's POST
// /nodes/{address}/wipe-ephemeral: a failed disk): its etcd data goes
// without a leave and it reboots with its configuration. A majority of
// control planes loses quorum; all of them lose the cluster's etcd and
// its Kubernetes objects.
func (s *scriptLab) wipeEtcd(ts *testscript.TestScript, names []string) {
	if len(names) == 0 {
		ts.Fatalf("usage: lab wipe-etcd NAME...")
	}
	for _, name := range names {
		addr := s.nodeAddress(ts, name)
		rec := httptest.NewRecorder()
		s.lab.ControlHandler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/nodes/"+addr+"/wipe-ephemeral", http.NoBody))
		if rec.Code != http.StatusNoContent {
			ts.Fatalf("lab wipe-etcd: %s (%s): %d %s", name, addr, rec.Code, rec.Body)
		}
	}
}
