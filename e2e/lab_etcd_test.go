package e2e

import (
	"slices"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// quorumPoll is how often a quorum watch reads the lab's etcd: a quorum
// the simulation breaks stays broken until a member is removed or comes
// back, which takes a whole Talos call.
const quorumPoll = time.Millisecond

// quorumWatch reads the quorum of the script's cluster's etcd in the lab
// until it is stopped, and keeps the first moment it was lost.
type quorumWatch struct {
	cluster *talosnode.Cluster
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	lost    []talosnode.EtcdMember // the member list when quorum was first lost
	at      time.Time
}

// etcdCmd is "lab etcd watch" and "lab etcd kept NAME...": watch starts
// reading the quorum of the lab's etcd of the script's cluster (it must
// hold then); kept checks that it never broke since, and that the lab's
// own member list is exactly NAMEs, each a started voter that is up (no
// learner, no unstarted member, no member of a wiped or deleted machine).
func (s *scriptLab) etcdCmd(ts *testscript.TestScript, args []string) {
	if len(args) < 1 || (args[0] != "watch" && args[0] != "kept") || (args[0] == "watch") != (len(args) == 1) {
		ts.Fatalf("usage: lab etcd watch | lab etcd kept NAME...")
	}
	if args[0] == "watch" {
		s.stopQuorumWatch()
		c := s.talosCluster(ts)
		if !c.Quorum() {
			ts.Fatalf("lab etcd watch: the etcd of %s has no quorum now: %+v", s.cluster, c.EtcdMembers())
		}
		w := &quorumWatch{cluster: c, stop: make(chan struct{}), done: make(chan struct{})}
		go w.run()
		s.quorum = w
		ts.Defer(s.stopQuorumWatch)
		return
	}
	w := s.quorum
	if w == nil {
		ts.Fatalf("lab etcd kept: no watch (lab etcd watch first)")
	}
	w.mu.Lock()
	lost, at := w.lost, w.at
	w.mu.Unlock()
	if lost != nil {
		ts.Fatalf("the etcd of %s lost quorum at %s; members then: %+v", s.cluster, at.Format(time.RFC3339Nano), lost)
	}
	var got []string
	members := w.cluster.EtcdMembers()
	for _, m := range members {
		if m.Learner || !m.Up {
			ts.Fatalf("etcd member %q (id %016x) is a learner or down: %+v", m.Hostname, m.ID, members)
		}
		got = append(got, m.Hostname)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(args[1:])); !slices.Equal(got, want) {
		ts.Fatalf("the lab's etcd members of %s: %v, want %v", s.cluster, got, want)
	}
}

// talosCluster is the script's bootstrapped cluster in the lab's Talos
// fleet (the newest of that name holding etcd members).
func (s *scriptLab) talosCluster(ts *testscript.TestScript) *talosnode.Cluster {
	var found *talosnode.Cluster
	for _, c := range s.lab.TalosClusters() {
		if c.Name() == s.cluster && c.Bootstrapped() && len(c.EtcdMembers()) > 0 {
			found = c
		}
	}
	if found == nil {
		ts.Fatalf("no bootstrapped Talos cluster %s in the lab", s.cluster)
	}
	return found
}

// stopQuorumWatch ends the running watch, if any.
func (s *scriptLab) stopQuorumWatch() {
	if s.quorum != nil {
		close(s.quorum.stop)
		<-s.quorum.done
		s.quorum = nil
	}
}

// run polls the quorum until stopped.
func (w *quorumWatch) run() {
	defer close(w.done)
	t := time.NewTicker(quorumPoll)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if w.cluster.Quorum() {
			continue
		}
		w.mu.Lock()
		if w.lost == nil {
			w.lost, w.at = w.cluster.EtcdMembers(), time.Now()
		}
		w.mu.Unlock()
	}
}
