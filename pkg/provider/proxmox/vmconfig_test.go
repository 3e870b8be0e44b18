package proxmox_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/provider"
)

// configReads counts the VM config reads the lab saw (GET .../pending,
// which holds both views).
func (l *pxLab) configReads() int {
	n := 0
	for _, c := range l.srv.Recorder().Calls() {
		if c.Method == http.MethodGet && strings.HasSuffix(c.Path, "/pending") {
			n++
		}
	}
	return n
}

// One run reads each VM's config once, however many methods look at it;
// a mutation of a VM makes the next look read it again.
func TestVMConfig_ReadOncePerRunAgainAfterAMutation(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.createCluster(t)
	inv := l.inventory(t)
	l.srv.Recorder().Reset()
	for range 2 { // a converge validates at the head of its pipe and again in the nodes phase
		if err := l.cloud.ValidateMachines(t.Context(), l.cfg.Hostnames(), inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.cloud.ReconcileMachines(t.Context(), inv, &provider.Plan{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cloud.PendingRestart(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), inv, &provider.Plan{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if n := l.configReads(); n != 5 {
		t.Errorf("%d config reads, want one per VM", n)
	}

	l.cfg.Workers[0].Cores = 4
	if err := l.cloud.ReconcileMachines(t.Context(), inv, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	l.srv.Recorder().Reset()
	pending, err := l.cloud.PendingRestart(t.Context(), inv)
	if err != nil || len(pending) != 2 {
		t.Errorf("pending %v, %v; want both workers", pending, err)
	}
	if n := l.configReads(); n != 2 {
		t.Errorf("%d config reads after the workers' update, want theirs again", n)
	}
}
